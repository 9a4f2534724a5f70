// Worker entry: serves a task (or a group of them) and moves the resulting buffers back instead of copying them.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { Piscina } from 'piscina';
import { moveResult, serve, type WorkerResult, type WorkerTask } from '../src/worker/tasks.js';

// Workers run a little below the main thread, which answers every request and every probe: on a
// busy machine a worker's long batch must not delay them. Linux only (/proc/thread-self names this
// thread); elsewhere, or without the right, nothing changes.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 5);
} catch {
  // not Linux, or not allowed
}

function moved(result: WorkerResult): WorkerResult {
  const transfer = [...new Set('results' in result ? result.results.flatMap(moveResult) : moveResult(result))];
  if (transfer.length === 0) return result;
  const move = { [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: result };
  return Piscina.move(move as unknown as Parameters<typeof Piscina.move>[0]) as unknown as WorkerResult;
}

export default function ingest(task: WorkerTask): WorkerResult | Promise<WorkerResult> {
  const result = serve(task);
  return result instanceof Promise ? result.then(moved) : moved(result);
}
