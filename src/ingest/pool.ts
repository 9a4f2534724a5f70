// The piscina pool that parses, verifies, normalizes and encodes off the main thread. Bodies up to
// INLINE_MAX_BYTES are handled inline; small ones above that travel in groups (every request that
// arrived in one turn of the event loop shares one message and one worker wake-up); large ones go
// alone. bench/run.ts compares the choices (b-small against b-small-pool).
import { Piscina } from 'piscina';
import { HttpError } from '../errors.js';
import { runTask, type SingleResult, type SingleTask, type WorkerResult, type WorkerTask } from '../pipeline/tasks.js';

const GROUP_MAX_BODY = 64 * 1024;
const GROUP_MAX_BYTES = 512 * 1024;
const GROUP_MAX_TASKS = 128;

interface Waiting {
  task: SingleTask;
  resolve: (r: SingleResult) => void;
  reject: (e: unknown) => void;
}

/** Only a buffer that owns its whole ArrayBuffer may move; a slice of Node's shared pool is copied. */
function movable(task: SingleTask): ArrayBuffer[] {
  if (!('body' in task)) return [];
  if (task.body.byteOffset !== 0 || task.body.byteLength !== task.body.buffer.byteLength) task.body = new Uint8Array(task.body);
  return [task.body.buffer as ArrayBuffer];
}

export class IngestPool {
  private readonly pool: Piscina<WorkerTask, WorkerResult>;
  private group: Waiting[] = [];
  private groupBytes = 0;
  private flushQueued = false;

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

  /** Whether a body of this size is processed on the main thread. */
  inline(bodyBytes: number): boolean {
    return bodyBytes <= this.inlineMaxBytes;
  }

  /** Runs `task` inline when its body is small enough, otherwise in a worker. */
  run(task: SingleTask, bodyBytes: number): Promise<SingleResult> {
    if (this.inline(bodyBytes)) return Promise.resolve(runTask(task) as SingleResult);
    if (bodyBytes > GROUP_MAX_BODY) return this.runInPool(task);
    return new Promise((resolve, reject) => {
      this.group.push({ task, resolve, reject });
      this.groupBytes += bodyBytes;
      if (this.group.length >= GROUP_MAX_TASKS || this.groupBytes >= GROUP_MAX_BYTES) this.flush();
      else if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs `task` in a worker on its own; a body's buffer is moved, not copied. */
  runInPool(task: SingleTask): Promise<SingleResult> {
    return this.send(task, movable(task)) as Promise<SingleResult>;
  }

  private flush(): void {
    this.flushQueued = false;
    const waiting = this.group;
    this.group = [];
    this.groupBytes = 0;
    if (waiting.length === 0) return;
    if (waiting.length === 1) {
      const [w] = waiting;
      this.runInPool(w!.task).then(w!.resolve, w!.reject);
      return;
    }
    const tasks = waiting.map((w) => w.task);
    this.send({ kind: 'group', tasks }, tasks.flatMap(movable)).then(
      (r) => {
        const results = (r as { results: SingleResult[] }).results;
        waiting.forEach((w, i) => w.resolve(results[i]!));
      },
      (err: unknown) => {
        for (const w of waiting) w.reject(err);
      },
    );
  }

  private async send(task: WorkerTask, transferList: ArrayBuffer[]): Promise<WorkerResult> {
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
