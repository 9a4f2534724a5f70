// The piscina pool that parses, verifies, normalizes and encodes off the main thread, with one
// typed method per task. Which bodies are handled inline is decided here only: uncompressed bodies
// up to INLINE_MAX_BYTES (a gzip body can expand to anything, so it always goes to a worker).
// Small bodies above that travel in groups (every request that arrived in one turn of the event
// loop shares one message and one worker wake-up); large ones go alone. Signature checks have a
// lane of their own: at most a few run at once and the rest wait in a bounded queue, so a flood
// of forged initData can neither fill the pool for ingestion nor grow memory.
import { Piscina } from 'piscina';
import type { UserSeen } from '../model.js';
import type { BatchContext, BatchOutcome } from '../pipeline/batch.js';
import { decodeJson } from '../pipeline/decode.js';
import { processWebappBatch, readWebappEnvelope } from '../pipeline/batch.js';
import {
  moveTask, runSingle, type SingleResult, type SingleTask, type TaskResults, type VerifyTask, type WebappOpened, type WorkerResult, type WorkerTask,
} from '../pipeline/tasks.js';

const GROUP_MAX_BODY = 64 * 1024;
const GROUP_MAX_BYTES = 512 * 1024;
const GROUP_MAX_TASKS = 128;

/** The pool's queue is full: shed the request rather than grow memory. */
export class PoolOverloaded extends Error {
  constructor() {
    super('the worker pool is overloaded');
    this.name = 'PoolOverloaded';
  }
}

interface Waiting {
  task: SingleTask;
  resolve: (r: SingleResult) => void;
  reject: (e: unknown) => void;
}

/** A webapp body read far enough to know its bot and session; `value` is set when it was parsed inline. */
export type OpenedWebapp = WebappOpened & ({ ok: false } | { ok: true; value?: unknown });

export interface PoolOptions {
  threads: number;
  inlineMaxBytes: number;
  /** Signature checks running in the pool at once. */
  verifyConcurrency: number;
  /** Signature checks waiting for their turn; past it, PoolOverloaded. */
  verifyQueueMax: number;
}

export class IngestPool {
  private readonly pool: Piscina<WorkerTask, WorkerResult>;
  private group: Waiting[] = [];
  private groupBytes = 0;
  private flushQueued = false;
  private verifying = 0;
  private readonly verifyQueue: (() => void)[] = [];
  /** Tasks run, by kind and where: read by metrics. */
  readonly tasks = new Map<string, number>();

  private count(kind: SingleTask['kind'], where: 'inline' | 'pool'): void {
    const key = `${kind}:${where}`;
    this.tasks.set(key, (this.tasks.get(key) ?? 0) + 1);
  }

  constructor(private readonly o: PoolOptions) {
    this.pool = new Piscina({
      filename: new URL('../../workers/ingest.js', import.meta.url).href,
      minThreads: o.threads,
      maxThreads: o.threads,
      idleTimeout: 60_000,
      // Bounded: a backlog past this answers 503 instead of growing memory without limit.
      maxQueue: o.threads * 256,
    });
  }

  get queueSize(): number {
    return this.pool.queueSize;
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  get verifyWaiting(): number {
    return this.verifyQueue.length;
  }

  /** Whether a body is processed on the main thread. */
  private inline(kind: SingleTask['kind'], bytes: number, gzip: boolean): boolean {
    const inline = !gzip && bytes <= this.o.inlineMaxBytes;
    this.count(kind, inline ? 'inline' : 'pool');
    return inline;
  }

  /** A bot_api body → rows, counts and diagnostics. */
  botApi(body: Uint8Array, gzip: boolean, maxBodyBytes: number, ctx: BatchContext): Promise<BatchOutcome> {
    const task: SingleTask = { kind: 'bot_api', body, gzip, maxBodyBytes, ctx };
    if (this.inline('bot_api', body.byteLength, gzip)) return Promise.resolve(runSingle(task));
    return this.pooled(task, body.byteLength) as Promise<BatchOutcome>;
  }

  /** A webapp body → which bot and session it claims (and, inline, the parsed body for webapp()). */
  async openWebapp(body: Uint8Array, gzip: boolean, maxBodyBytes: number): Promise<OpenedWebapp> {
    if (this.inline('webapp_open', body.byteLength, gzip)) {
      const decoded = decodeJson(body, false, maxBodyBytes);
      if (!decoded.ok) return decoded;
      const env = readWebappEnvelope(decoded.value);
      return env.ok ? { ok: true, envelope: env.envelope, bytes: decoded.bytes, value: decoded.value } : env;
    }
    return (await this.pooled({ kind: 'webapp_open', body, gzip, maxBodyBytes }, body.byteLength)) as WebappOpened;
  }

  /** The events of an opened webapp body, for a verified user. */
  webapp(opened: OpenedWebapp & { ok: true }, ctx: BatchContext, user: UserSeen): Promise<BatchOutcome> {
    if (opened.value !== undefined) {
      this.count('webapp', 'inline');
      const events = (opened.value as { events?: unknown }).events;
      return Promise.resolve(processWebappBatch(events, ctx, user, opened.bytes.byteLength));
    }
    this.count('webapp', 'pool');
    return this.pooled({ kind: 'webapp', body: opened.bytes, ctx, user }, opened.bytes.byteLength) as Promise<BatchOutcome>;
  }

  /** An Ed25519 check, always in a worker (a forged string must not cost the main thread), in its own lane. */
  async verify(task: Omit<VerifyTask, 'kind'>): Promise<boolean> {
    if (this.verifying >= this.o.verifyConcurrency) {
      if (this.verifyQueue.length >= this.o.verifyQueueMax) throw new PoolOverloaded();
      await new Promise<void>((resolve) => this.verifyQueue.push(resolve));
    }
    this.verifying++;
    this.count('verify', 'pool');
    try {
      const r = (await this.send({ kind: 'verify', ...task }, [])) as TaskResults['verify'];
      return r.verified;
    } finally {
      this.verifying--;
      this.verifyQueue.shift()?.();
    }
  }

  /** Runs `task` in a worker: alone when large, grouped with others of this turn when small. */
  private pooled(task: SingleTask, bytes: number): Promise<SingleResult> {
    if (bytes > GROUP_MAX_BODY) return this.send(task, moveTask(task)) as Promise<SingleResult>;
    return new Promise((resolve, reject) => {
      this.group.push({ task, resolve, reject });
      this.groupBytes += bytes;
      if (this.group.length >= GROUP_MAX_TASKS || this.groupBytes >= GROUP_MAX_BYTES) this.flush();
      else if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushQueued = false;
    const waiting = this.group;
    this.group = [];
    this.groupBytes = 0;
    if (waiting.length === 0) return;
    if (waiting.length === 1) {
      const [w] = waiting;
      (this.send(w!.task, moveTask(w!.task)) as Promise<SingleResult>).then(w!.resolve, w!.reject);
      return;
    }
    const tasks = waiting.map((w) => w.task);
    this.send({ kind: 'group', tasks }, [...new Set(tasks.flatMap(moveTask))]).then(
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
      if ((err as Error).message?.includes('Task queue is at limit')) throw new PoolOverloaded();
      throw err;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
