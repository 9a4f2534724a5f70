// The piscina pool that parses, verifies, normalizes and encodes off the main thread. Bodies up to
// INLINE_MAX_BYTES are handled inline instead: for them a round trip to a worker costs the main
// thread more than the work itself (bench/inline-vs-pool.ts measures it).
import { Piscina } from 'piscina';
import { HttpError } from '../errors.js';
import { runTask, type WorkerResult, type WorkerTask } from '../pipeline/tasks.js';

export class IngestPool {
  private readonly pool: Piscina<WorkerTask, WorkerResult>;

  constructor(threads: number, private readonly inlineMaxBytes: number) {
    this.pool = new Piscina({
      filename: new URL('../../workers/ingest.js', import.meta.url).href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 60_000,
      // Bounded: a backlog past this answers 503 instead of growing memory without limit.
      maxQueue: threads * 256,
    });
  }

  get queueSize(): number {
    return this.pool.queueSize;
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /** Whether a body of this size is cheaper to process on the main thread. */
  inline(bodyBytes: number): boolean {
    return bodyBytes <= this.inlineMaxBytes;
  }

  /** Runs `task` inline when its body is small, otherwise in a worker. */
  run(task: WorkerTask, bodyBytes: number): Promise<WorkerResult> {
    return this.inline(bodyBytes) ? Promise.resolve(runTask(task)) : this.runInPool(task);
  }

  /** Runs `task` in a worker; a body's buffer is moved, not copied. */
  async runInPool(task: WorkerTask): Promise<WorkerResult> {
    let transferList: ArrayBuffer[] = [];
    if ('body' in task) {
      // Only a buffer that owns its whole ArrayBuffer may move; a slice of Node's shared pool is copied.
      if (task.body.byteOffset !== 0 || task.body.byteLength !== task.body.buffer.byteLength) task.body = new Uint8Array(task.body);
      transferList = [task.body.buffer as ArrayBuffer];
    }
    try {
      return await this.pool.run(task, { transferList });
    } catch (err) {
      if ((err as Error).message?.includes('Task queue is at limit')) {
        throw new HttpError('unavailable', 'The service is overloaded; retry shortly.', undefined, 1);
      }
      throw err;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
