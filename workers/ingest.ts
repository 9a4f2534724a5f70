// Worker entry: runs a task (or a group of them) and moves the encoded rows back instead of copying them.
import { Piscina } from 'piscina';
import { runTask, type SingleResult, type WorkerResult, type WorkerTask } from '../src/pipeline/tasks.js';

/** Only memory the rows own may move; a slice of Node's buffer pool (an 8 KiB slab) is copied first. */
function rowsToMove(r: SingleResult): ArrayBuffer[] {
  if (!('ok' in r) || !r.ok) return [];
  if (r.batch.rows.buffer.byteLength === Buffer.poolSize) r.batch.rows = new Uint8Array(r.batch.rows);
  return [r.batch.rows.buffer as ArrayBuffer];
}

export default function ingest(task: WorkerTask): WorkerResult {
  const result = runTask(task);
  const transfer = 'results' in result ? result.results.flatMap(rowsToMove) : rowsToMove(result);
  if (transfer.length === 0) return result;
  const move = { [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: result };
  return Piscina.move(move as unknown as Parameters<typeof Piscina.move>[0]) as unknown as WorkerResult;
}
