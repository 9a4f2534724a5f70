// Worker entry: runs one task and moves the encoded rows back instead of copying them.
import { Piscina } from 'piscina';
import { runTask, type WorkerResult, type WorkerTask } from '../src/pipeline/tasks.js';

export default function ingest(task: WorkerTask): WorkerResult {
  const result = runTask(task);
  if (!('ok' in result) || !result.ok) return result;
  const rows = result.batch.rows.buffer;
  const movable = {
    [Piscina.transferableSymbol]: [rows],
    [Piscina.valueSymbol]: result,
  };
  return Piscina.move(movable as unknown as Parameters<typeof Piscina.move>[0]) as unknown as WorkerResult;
}
