// The messages between the main thread and the workers, and the one function that serves them.
// Runs in a worker or, for small bodies, inline on the main thread: the same code either way.
// Every task runs in its own try: a throw answers its own request, never the others of a group.
import { verifySignature } from './ed25519.js';
import type { UserSeen } from '../base/model.js';
import {
  type BatchContext,
  type BatchOutcome,
  processBotApiBatch,
  processWebappBatch,
  recheckQuarantined,
  type Rechecked,
} from '../pipeline/batch.js';
import { type BodyLimits, decodeJson, inflatePrefix } from '../pipeline/decode.js';
import {
  type EnvelopeOutcome,
  envelopeFromPrefix,
  needsMore,
  readWebappEnvelope,
  sameEnvelope,
  type WebappEnvelope,
} from '../pipeline/envelope.js';
import { compilePlan, PlanInvalid, type TrackingPlan } from '../pipeline/plans.js';

export interface IngestLimits extends BodyLimits {
  /** users[] profiles a bot_api request may carry. */
  maxProfiles: number;
}

export interface BotApiTask {
  kind: 'bot_api';
  body: Uint8Array;
  gzip: boolean;
  limits: IngestLimits;
  ctx: BatchContext;
}

/**
 * Which bot and session a webapp body claims, read before anything about its sender is known:
 * from the first `prefixBytes` of its (decompressed) content. `body` is the request's body, or only
 * its beginning when `whole` is false.
 */
export interface WebappOpenTask {
  kind: 'webapp_open';
  body: Uint8Array;
  gzip: boolean;
  whole: boolean;
  prefixBytes: number;
  limits: BodyLimits;
}

/** The events of a webapp body whose sender was verified by its envelope, which the whole body must repeat. */
export interface WebappTask {
  kind: 'webapp';
  body: Uint8Array;
  gzip: boolean;
  limits: BodyLimits;
  envelope: WebappEnvelope;
  ctx: BatchContext;
  user: UserSeen;
}

export interface VerifyTask {
  kind: 'verify';
  message: string;
  signature: string;
  publicKeys: readonly string[];
}

/** A tracking plan as PUT: compiled off the main thread, so an expensive one costs a worker, not the service. */
export interface CompilePlanTask {
  kind: 'compile_plan';
  plan: TrackingPlan;
}

/** Quarantined events checked again for a replay, with the plan in force now. */
export interface ReplayTask {
  kind: 'replay';
  items: { event: string; truncated: boolean; ctx: BatchContext; webappUser: string | null }[];
  maxDepth: number;
}

export type Task = BotApiTask | WebappOpenTask | WebappTask | VerifyTask | CompilePlanTask | ReplayTask;
export type TaskKind = Task['kind'];
export type TaskOf<K extends TaskKind> = Extract<Task, { kind: K }>;

/** What each kind of task answers. */
export interface TaskResults {
  bot_api: BatchOutcome;
  webapp_open: EnvelopeOutcome;
  webapp: BatchOutcome;
  verify: { verified: boolean };
  compile_plan: { ok: true } | { ok: false; eventName: string; message: string };
  replay: Rechecked[];
}

/** A task that threw. `byInput`: the request's data caused it (a RangeError: too deep or too large to process). */
export interface TaskFailure {
  failed: string;
  byInput: boolean;
}

export type TaskResult<K extends TaskKind = TaskKind> = TaskResults[K] | TaskFailure;

/** Small requests travel to a worker in groups: one message for many, one wake-up of the worker. */
export type WorkerTask = Task | { kind: 'group'; tasks: Task[] };
export type WorkerResult = TaskResult | { results: TaskResult[] };

export function isFailure(r: unknown): r is TaskFailure {
  return typeof r === 'object' && r !== null && 'failed' in r;
}

function failure(err: unknown): TaskFailure {
  return {
    failed: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    byInput: err instanceof RangeError,
  };
}

/** `f()`, or its throw as a TaskFailure. */
export function attempt<T>(f: () => T): T | TaskFailure {
  try {
    return f();
  } catch (err) {
    return failure(err);
  }
}

function webappBatch(task: WebappTask): BatchOutcome {
  const decoded = decodeJson(task.body, task.gzip, task.limits);
  if (!decoded.ok) return decoded;
  const env = readWebappEnvelope(decoded.value);
  if (!env.ok) return env;
  // The envelope was read from the beginning of the body; a key repeated further on must not change it.
  if (!sameEnvelope(env.envelope, task.envelope))
    return {
      ok: false,
      refusal: { code: 'invalid_body', message: 'botId or auth appears more than once with different values.' },
    };
  return inflated(
    processWebappBatch((decoded.value as { events?: unknown }).events, task.ctx, task.user, decoded.bytes.byteLength),
    task.gzip,
    decoded.bytes,
  );
}

function inflated(r: BatchOutcome, gzip: boolean, bytes: Uint8Array): BatchOutcome {
  if (gzip && r.ok) r.batch.inflatedBytes = bytes.byteLength;
  return r;
}

async function openWebapp(task: WebappOpenTask): Promise<EnvelopeOutcome> {
  let bytes = task.body;
  let complete = task.whole;
  if (task.gzip) {
    // Inflating stops as soon as the envelope is found or refused (a bomb naming no bot costs one chunk).
    const decided = (sofar: Buffer) =>
      !needsMore(envelopeFromPrefix(sofar.toString('utf8'), task.limits, task.prefixBytes));
    const inflated = await inflatePrefix(task.body, task.prefixBytes, task.whole, decided);
    if (!inflated.ok) return inflated;
    ({ bytes, complete } = inflated);
  } else if (bytes.byteLength > task.prefixBytes) {
    bytes = bytes.subarray(0, task.prefixBytes);
    complete = false;
  }
  if (complete) {
    const decoded = decodeJson(bytes, false, task.limits);
    return decoded.ok ? readWebappEnvelope(decoded.value) : decoded;
  }
  return envelopeFromPrefix(
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
    task.limits,
    task.prefixBytes,
  );
}

function compile(task: CompilePlanTask): TaskResults['compile_plan'] {
  try {
    compilePlan(task.plan);
    return { ok: true };
  } catch (err) {
    if (err instanceof PlanInvalid) return { ok: false, eventName: err.eventName, message: err.message };
    throw err;
  }
}

function runSync(task: Exclude<Task, WebappOpenTask>): TaskResult {
  switch (task.kind) {
    case 'bot_api': {
      const decoded = decodeJson(task.body, task.gzip, task.limits);
      if (!decoded.ok) return decoded;
      return inflated(
        processBotApiBatch(decoded.value, task.ctx, decoded.bytes.byteLength, task.limits.maxProfiles),
        task.gzip,
        decoded.bytes,
      );
    }
    case 'webapp':
      return webappBatch(task);
    case 'verify':
      return { verified: verifySignature(task.message, task.signature, task.publicKeys) };
    case 'compile_plan':
      return compile(task);
    case 'replay':
      return task.items.map((i) => {
        try {
          return recheckQuarantined(i.event, i.truncated, i.ctx, i.webappUser, task.maxDepth);
        } catch (err) {
          return {
            eventId: null,
            batch: null,
            diagnostics: [
              {
                event_id: null,
                code: 'event_invalid',
                severity: 'error',
                path: 'event',
                message: `the event could not be checked again: ${failure(err).failed.slice(0, 200)}`,
              },
            ],
          };
        }
      });
  }
}

/** One task, its failure caught: the same on the main thread (small bodies) and in a worker. */
export function runTask<K extends TaskKind>(task: TaskOf<K>): TaskResult<K> | Promise<TaskResult<K>> {
  if (task.kind === 'webapp_open') return openWebapp(task as WebappOpenTask).then((r) => r as TaskResult<K>, failure);
  return attempt(() => runSync(task as Exclude<Task, WebappOpenTask>)) as TaskResult<K>;
}

/** What a worker serves: one task, or a group of small ones, each with its own fate. */
export function serve(task: WorkerTask): WorkerResult | Promise<WorkerResult> {
  // Only tasks that finish at once are grouped (a webapp_open never is): a promise here is a bug, answered as one.
  if (task.kind === 'group')
    return {
      results: task.tasks.map((t) => {
        const r = runTask(t);
        return r instanceof Promise ? { failed: `a ${t.kind} task cannot run in a group`, byInput: false } : r;
      }),
    };
  return runTask(task);
}

/**
 * The one rule for what may move between threads instead of being copied: memory that nothing else
 * shares. Small Buffers are slices of Node's shared pool (one slab of Buffer.poolSize bytes), so
 * those are copied first; anything else moves whole.
 */
export function movable(view: Uint8Array): Uint8Array {
  return view.buffer.byteLength === Buffer.poolSize ? new Uint8Array(view) : view;
}

/** Makes a task's body movable; returns the memory to transfer with it. */
export function moveTask(task: Task): ArrayBuffer[] {
  if (!('body' in task)) return [];
  task.body = movable(task.body);
  return [task.body.buffer as ArrayBuffer];
}

/** Makes a result's buffers (rows, report summary, session records and quarantine) movable; returns the memory to transfer with them. */
export function moveResult(r: TaskResult): ArrayBuffer[] {
  if (!('ok' in r) || !r.ok || !('batch' in r)) return [];
  r.batch.rows = movable(r.batch.rows);
  const out = [r.batch.rows.buffer as ArrayBuffer];
  const add = (view: Uint8Array) => {
    if (view.byteLength === 0) return view;
    const moved = movable(view);
    if (!out.includes(moved.buffer as ArrayBuffer)) out.push(moved.buffer as ArrayBuffer);
    return moved;
  };
  r.batch.summary = add(r.batch.summary);
  r.batch.sessions = add(r.batch.sessions);
  r.batch.quarantine = add(r.batch.quarantine);
  return out;
}
