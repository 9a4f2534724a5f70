// The piscina pool that parses, verifies, normalizes and encodes off the main thread, with one
// typed method per task. Which bodies are handled inline is decided here only: uncompressed bodies
// up to INLINE_MAX_BYTES of a project without a tracking plan (a gzip body can expand to anything,
// and a plan's schemas are the admin's code, so those always go to a worker). Small bodies above
// that travel in groups (every request that arrived in one turn of the event loop shares one
// message and one worker wake-up); large ones go alone.
//
// Work done before the sender is known (signature checks, the envelope of a large or compressed
// webapp body) runs in a lane of its own: at most `laneConcurrency` tasks at once (fewer than the
// threads, so requests whose session or token is known always find a worker) and a bounded queue,
// so a flood can neither fill the pool nor grow memory. Work of clients past a failure budget, or
// past their address's share of the queue, waits in a second, small queue that gets one freed slot
// in four while both wait.
import { Piscina } from 'piscina';
import { PoolOverloaded, TaskFailed } from './errors.js';
import { InlineQueue, UNAUTHENTICATED_MAX_WAIT_MS } from './inline-queue.js';
import type { UserSeen } from '../base/model.js';
import { type BatchContext, type BatchOutcome, processWebappBatch } from '../pipeline/batch.js';
import { type BodyLimits, decodeJson } from '../pipeline/decode.js';
import { type EnvelopeOutcome, readWebappEnvelope, type WebappEnvelope } from '../pipeline/envelope.js';
import type { TrackingPlan } from '../pipeline/plans.js';
import {
  attempt,
  type IngestLimits,
  isFailure,
  moveTask,
  runTask,
  type Task,
  type TaskKind,
  type TaskOf,
  type TaskResult,
  type TaskResults,
  type VerifyTask,
  type WorkerResult,
  type WorkerTask,
} from './tasks.js';

const GROUP_MAX_BODY = 64 * 1024;
const GROUP_MAX_BYTES = 512 * 1024;
const GROUP_MAX_TASKS = 128;
/** How long a tracking plan may take to compile at PUT. */
const COMPILE_TIMEOUT_MS = 10_000;
/** Compressed bytes sent with a webapp envelope task beyond the prefix it inflates: gzip's framing. */
const GZIP_SLACK = 16 * 1024;

function unwrap<K extends TaskKind>(r: TaskResult<K>): TaskResults[K] {
  if (isFailure(r)) throw new TaskFailed(r.byInput, r.failed);
  return r;
}

/** A webapp body read far enough to know its bot and session; `value` is the whole body when it was parsed inline. */
export type OpenedWebapp =
  | { ok: true; envelope: WebappEnvelope; value?: unknown; bytes?: Uint8Array }
  | Extract<EnvelopeOutcome, { ok: false }>;

export type Priority = 'normal' | 'low';
/** What the task counters name: a task's kind, or work before authentication served in the low-priority lane. */
type Counted = TaskKind | 'verify_low_priority' | 'webapp_open_low_priority';

interface RunOptions {
  /** On the main thread. */
  inline?: boolean;
  /** Through the unauthenticated lane, at this priority. */
  lane?: Priority;
  /** See Lane.run. */
  admit?: () => boolean;
  signal?: AbortSignal;
}

interface Waiting {
  task: Task;
  resolve: (r: TaskResult) => void;
  reject: (e: unknown) => void;
}

export interface PoolOptions {
  threads: number;
  inlineMaxBytes: number;
  /** Unauthenticated tasks running in the pool at once. */
  laneConcurrency: number;
  /** Unauthenticated tasks waiting for their turn; past it, PoolOverloaded. */
  laneQueueMax: number;
  /** Checks of clients past a failure budget waiting; past it, PoolOverloaded. */
  lowQueueMax: number;
  /** How much of a webapp body is read before its sender is known (WEBAPP_ENVELOPE_MAX_BYTES). */
  envelopeMaxBytes: number;
}

/** One freed slot in this many goes to the low-priority queue when both wait: it is served last, never never. */
const LOW_EVERY = 4;

interface LaneWaiter {
  start: () => void;
  timer: NodeJS.Timeout;
}

/**
 * A bounded number of tasks at once, the rest queued by priority, each queue bounded and each wait
 * bounded. A freed slot passes straight to the next waiter (no newcomer can slip in between).
 */
export class Lane {
  private running = 0;
  private turn = 0;
  private readonly queues: Record<Priority, LaneWaiter[]> = { normal: [], low: [] };

  constructor(
    private readonly concurrency: number,
    private readonly max: Record<Priority, number>,
  ) {}

  get waiting(): number {
    return this.queues.normal.length + this.queues.low.length;
  }

  /**
   * Runs `work` in a slot. `admit`, asked when a normal-priority task gets its slot: false moves it
   * to the low-priority queue instead (a budget spent while it waited).
   */
  async run<T>(priority: Priority, work: () => Promise<T>, admit?: () => boolean): Promise<T> {
    for (let p = priority; ; p = 'low') {
      await this.acquire(p);
      try {
        if (p === 'normal' && admit !== undefined && !admit()) continue;
        return await work();
      } finally {
        this.release();
      }
    }
  }

  private acquire(priority: Priority): Promise<void> {
    if (this.running < this.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    const queue = this.queues[priority];
    if (queue.length >= this.max[priority]) return Promise.reject(new PoolOverloaded());
    return new Promise((resolve, reject) => {
      const waiter: LaneWaiter = {
        start: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          queue.splice(queue.indexOf(waiter), 1);
          reject(new PoolOverloaded());
        }, UNAUTHENTICATED_MAX_WAIT_MS),
      };
      queue.push(waiter);
    });
  }

  private release(): void {
    const { normal, low } = this.queues;
    const next =
      low.length > 0 && (normal.length === 0 || ++this.turn % LOW_EVERY === 0) ? low.shift() : normal.shift();
    if (next === undefined) this.running--;
    else next.start();
  }
}

export class IngestPool {
  private readonly pool: Piscina<WorkerTask, WorkerResult>;
  private group: Waiting[] = [];
  private groupBytes = 0;
  private flushQueued = false;
  private readonly lane: Lane;
  /** The main thread's share of the work, in its turn (inline-queue.ts). */
  readonly inlineQueue: InlineQueue;
  /** Tasks run, by kind and where: read by metrics. */
  readonly tasks = new Map<string, number>();

  constructor(private readonly o: PoolOptions) {
    this.pool = new Piscina({
      filename: new URL('../../workers/ingest.js', import.meta.url).href,
      minThreads: o.threads,
      maxThreads: o.threads,
      idleTimeout: 60_000,
      // Bounded: a backlog past this answers 503 instead of growing memory without limit.
      maxQueue: o.threads * 256,
    });
    this.lane = new Lane(o.laneConcurrency, { normal: o.laneQueueMax, low: o.lowQueueMax });
    // Small bodies read before their sender is known wait, at most as many as the lane's, apart from known senders'.
    this.inlineQueue = new InlineQueue(o.laneQueueMax);
  }

  get queueSize(): number {
    return this.pool.queueSize;
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  /** Work before authentication waiting: in the lane, or in the inline queue. */
  get unauthenticatedWaiting(): number {
    return this.lane.waiting + this.inlineQueue.unknownLength;
  }

  private count(kind: Counted, where: 'inline' | 'pool'): void {
    const key = `${kind}:${where}`;
    this.tasks.set(key, (this.tasks.get(key) ?? 0) + 1);
  }

  /**
   * On the main thread (in its turn: inline-queue.ts): small, uncompressed, checked against no tracking plan, and not
   * `mayInline` false (an address past its failure budget, served by the lane's low-priority queue).
   */
  private inline(kind: Counted, bytes: number, gzip: boolean, ctx?: BatchContext, mayInline = true): boolean {
    const inline = mayInline && this.fitsInline(bytes, gzip, ctx);
    this.count(kind, inline ? 'inline' : 'pool');
    return inline;
  }

  private fitsInline(bytes: number, gzip: boolean, ctx?: BatchContext): boolean {
    return !gzip && bytes <= this.o.inlineMaxBytes && ctx?.plan == null;
  }

  /**
   * The one way a task runs: on the main thread (`inline`), or in a worker, grouped with the small
   * ones of this turn or alone, through the unauthenticated lane when `lane` is given. Its result
   * is its kind's; a throw, wherever it ran, becomes TaskFailed.
   */
  private async run<K extends TaskKind>(task: TaskOf<K>, o: RunOptions = {}): Promise<TaskResults[K]> {
    if (o.inline === true) return unwrap(await this.inlineQueue.run(() => runTask(task)));
    const dispatch = () => this.dispatch(task, o.signal);
    return unwrap(o.lane === undefined ? await dispatch() : await this.lane.run(o.lane, dispatch, o.admit));
  }

  /** The thread boundary: a worker answers each task with the result of its kind (tasks.ts, serve). */
  private async dispatch<K extends TaskKind>(task: TaskOf<K>, signal?: AbortSignal): Promise<TaskResult<K>> {
    const t: Task = task;
    // A task checked against a tracking plan (the admin's code) goes alone: however long the plan
    // makes it, it holds up no other project's request.
    const groupable =
      (t.kind === 'bot_api' || t.kind === 'webapp') && t.ctx.plan == null && t.body.byteLength <= GROUP_MAX_BODY;
    const result = groupable ? await this.grouped(t) : await this.send(t, moveTask(t), signal);
    return result as TaskResult<K>;
  }

  /** A bot_api body → rows, counts and diagnostics. */
  botApi(body: Uint8Array, gzip: boolean, limits: IngestLimits, ctx: BatchContext): Promise<BatchOutcome> {
    return this.run<'bot_api'>(
      { kind: 'bot_api', body, gzip, limits, ctx },
      { inline: this.inline('bot_api', body.byteLength, gzip, ctx) },
    );
  }

  /**
   * Which bot and session a webapp body claims. A small plain body is parsed whole, inline (and kept
   * for webapp()); anything else in the unauthenticated lane, from its first envelopeMaxBytes only. `take`, asked for
   * work bound for the lane at normal priority, holds the request's place in its address's share of the lane's queue:
   * false (the share is full) sends it to the low-priority queue.
   */
  async openWebapp(
    body: Uint8Array,
    gzip: boolean,
    limits: BodyLimits,
    priority: Priority = 'normal',
    take?: () => boolean,
  ): Promise<OpenedWebapp> {
    const inline = priority === 'normal' && this.fitsInline(body.byteLength, gzip);
    const lane: Priority = inline || priority === 'low' || take === undefined || take() ? priority : 'low';
    return this.open(body, gzip, limits, lane);
  }

  private async open(body: Uint8Array, gzip: boolean, limits: BodyLimits, priority: Priority): Promise<OpenedWebapp> {
    // An address past its failure budget (or its share) is served by the lane's low-priority queue, small body or not.
    const kind = priority === 'low' ? 'webapp_open_low_priority' : 'webapp_open';
    if (this.inline(kind, body.byteLength, gzip, undefined, priority === 'normal'))
      return this.inlineQueue.run((): OpenedWebapp => {
        const decoded = decodeJson(body, false, limits);
        if (!decoded.ok) return decoded;
        const env = readWebappEnvelope(decoded.value);
        return env.ok ? { ok: true, envelope: env.envelope, value: decoded.value, bytes: decoded.bytes } : env;
      }, false);
    // A copy of the part it needs moves to the worker; the body stays here for webapp().
    const needed = gzip ? this.o.envelopeMaxBytes + GZIP_SLACK : this.o.envelopeMaxBytes;
    const whole = body.byteLength <= needed;
    const part = new Uint8Array(whole ? body : body.subarray(0, needed));
    return this.run<'webapp_open'>(
      { kind: 'webapp_open', body: part, gzip, whole, prefixBytes: this.o.envelopeMaxBytes, limits },
      { lane: priority },
    );
  }

  /** The events of an opened webapp body, for a verified user. */
  async webapp(
    opened: OpenedWebapp & { ok: true },
    body: Uint8Array,
    gzip: boolean,
    limits: BodyLimits,
    ctx: BatchContext,
    user: UserSeen,
  ): Promise<BatchOutcome> {
    if (opened.value !== undefined && ctx.plan == null) {
      // Parsed whole already (openWebapp): the events are taken from that.
      this.count('webapp', 'inline');
      const events = (opened.value as { events?: unknown }).events;
      return unwrap<'webapp'>(
        await this.inlineQueue.run(() =>
          attempt(() => processWebappBatch(events, ctx, user, opened.bytes!.byteLength)),
        ),
      );
    }
    this.count('webapp', 'pool');
    return this.run<'webapp'>({ kind: 'webapp', body, gzip, limits, envelope: opened.envelope, ctx, user });
  }

  /**
   * An Ed25519 check, always in a worker (a forged string must not cost the main thread), in the unauthenticated lane.
   */
  async verify(
    check: Omit<VerifyTask, 'kind'>,
    priority: Priority = 'normal',
    admit?: () => boolean,
  ): Promise<boolean> {
    let ran = priority;
    const admitted =
      admit === undefined
        ? undefined
        : () => {
            const ok = admit();
            if (!ok) ran = 'low';
            return ok;
          };
    const { verified } = await this.run<'verify'>(
      { kind: 'verify', ...check },
      { lane: priority, ...(admitted === undefined ? {} : { admit: admitted }) },
    );
    this.count(ran === 'low' ? 'verify_low_priority' : 'verify', 'pool');
    return verified;
  }

  /** Compiles a tracking plan in a worker: null when it compiles, else the event whose schema does not. */
  async compilePlan(plan: TrackingPlan): Promise<{ eventName: string; message: string } | null> {
    this.count('compile_plan', 'pool');
    try {
      // A compile that takes longer ends its worker (piscina starts another).
      const compiled = await this.run<'compile_plan'>(
        { kind: 'compile_plan', plan },
        { signal: AbortSignal.timeout(COMPILE_TIMEOUT_MS) },
      );
      return compiled.ok ? null : { eventName: compiled.eventName, message: compiled.message };
    } catch (err) {
      if ((err as Error).name === 'AbortError')
        return { eventName: '*', message: `the plan did not compile within ${COMPILE_TIMEOUT_MS / 1000} s` };
      throw err;
    }
  }

  /** Quarantined events checked again (a replay), in a worker: the plan's schemas are the admin's code. */
  recheck(items: TaskOf<'replay'>['items'], maxDepth: number): Promise<TaskResults['replay']> {
    this.count('replay', 'pool');
    return this.run<'replay'>({ kind: 'replay', items, maxDepth });
  }

  /** Small tasks of this turn of the event loop, sent as one message. */
  private grouped(task: Task): Promise<TaskResult> {
    return new Promise((resolve, reject) => {
      this.group.push({ task, resolve, reject });
      this.groupBytes += 'body' in task ? task.body.byteLength : 0;
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
      this.send(w!.task, moveTask(w!.task)).then((r) => w!.resolve(r as TaskResult), w!.reject);
      return;
    }
    const tasks = waiting.map((w) => w.task);
    this.send({ kind: 'group', tasks }, [...new Set(tasks.flatMap(moveTask))]).then(
      (r) => {
        const results = (r as { results: TaskResult[] }).results;
        waiting.forEach((w, i) => {
          w.resolve(results[i]!);
        });
      },
      // Only a worker that died gets here (each task's own throw is its own result).
      (err: unknown) => {
        for (const w of waiting) w.reject(err);
      },
    );
  }

  private async send(task: WorkerTask, transferList: ArrayBuffer[], signal?: AbortSignal): Promise<WorkerResult> {
    try {
      return await this.pool.run(task, { transferList, ...(signal === undefined ? {} : { signal }) });
    } catch (err) {
      if ((err as Error).message?.includes('Task queue is at limit')) throw new PoolOverloaded();
      throw err;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
