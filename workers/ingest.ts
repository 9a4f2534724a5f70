// Worker entry: runs a task (or a group of them) and moves the resulting buffers back instead of copying them.
import { Piscina } from 'piscina';
import { moveResult, runTask, type WorkerResult, type WorkerTask } from '../src/pipeline/tasks.js';

export default function ingest(task: WorkerTask): WorkerResult {
  const result = runTask(task);
  const transfer = [...new Set('results' in result ? result.results.flatMap(moveResult) : moveResult(result))];
  if (transfer.length === 0) return result;
  const move = { [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: result };
  return Piscina.move(move as unknown as Parameters<typeof Piscina.move>[0]) as unknown as WorkerResult;
}
