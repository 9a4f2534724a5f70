// The messages between the main thread and the workers, and the one function that serves them.
// Runs in a worker or, for small bodies, inline on the main thread: the same code either way.
import { verifySignature } from '../auth/ed25519.js';
import type { UserSeen } from '../model.js';
import { type BatchContext, type BatchOutcome, processBotApiBatch, processWebappBatch, readWebappEnvelope, type Refusal, type WebappEnvelope } from './batch.js';
import { decodeJson } from './decode.js';

export interface BotApiTask {
  kind: 'bot_api';
  body: Uint8Array;
  gzip: boolean;
  maxBodyBytes: number;
  ctx: BatchContext;
}

/** First step of a large or compressed webapp body: decode it and read which bot and session it claims. */
export interface WebappOpenTask {
  kind: 'webapp_open';
  body: Uint8Array;
  gzip: boolean;
  maxBodyBytes: number;
}

export type WebappOpened =
  | { ok: true; envelope: WebappEnvelope; /** The decoded JSON text, for the second step. */ bytes: Uint8Array }
  | { ok: false; refusal: Refusal };

/** Second step: the events of a body decoded by webapp_open (valid JSON), once the user is verified. */
export interface WebappTask {
  kind: 'webapp';
  body: Uint8Array;
  ctx: BatchContext;
  user: UserSeen;
}

export interface VerifyTask {
  kind: 'verify';
  message: string;
  signature: string;
  publicKeys: readonly string[];
}

export type SingleTask = BotApiTask | WebappOpenTask | WebappTask | VerifyTask;

/** What each kind of task answers. */
export interface TaskResults {
  bot_api: BatchOutcome;
  webapp_open: WebappOpened;
  webapp: BatchOutcome;
  verify: { verified: boolean };
}

export type SingleResult = TaskResults[SingleTask['kind']];

/** Small requests travel to a worker in groups: one message for many, one wake-up of the worker. */
export type WorkerTask = SingleTask | { kind: 'group'; tasks: SingleTask[] };
export type WorkerResult = SingleResult | { results: SingleResult[] };

export function runTask(task: WorkerTask): WorkerResult {
  if (task.kind === 'group') return { results: task.tasks.map(runSingle) };
  return runSingle(task);
}

export function runSingle<T extends SingleTask>(task: T): TaskResults[T['kind']];
export function runSingle(task: SingleTask): SingleResult {
  switch (task.kind) {
    case 'bot_api': {
      const decoded = decodeJson(task.body, task.gzip, task.maxBodyBytes);
      if (!decoded.ok) return decoded;
      return processBotApiBatch(decoded.value, task.ctx, decoded.bytes.byteLength);
    }
    case 'webapp_open': {
      const decoded = decodeJson(task.body, task.gzip, task.maxBodyBytes);
      if (!decoded.ok) return decoded;
      const env = readWebappEnvelope(decoded.value);
      return env.ok ? { ok: true, envelope: env.envelope, bytes: decoded.bytes } : env;
    }
    case 'webapp': {
      const decoded = decodeJson(task.body, false, Number.MAX_SAFE_INTEGER);
      if (!decoded.ok) return decoded;
      return processWebappBatch((decoded.value as { events?: unknown }).events, task.ctx, task.user, decoded.bytes.byteLength);
    }
    case 'verify':
      return { verified: verifySignature(task.message, task.signature, task.publicKeys) };
  }
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
export function moveTask(task: SingleTask): ArrayBuffer[] {
  if (!('body' in task)) return [];
  task.body = movable(task.body);
  return [task.body.buffer as ArrayBuffer];
}

/** Makes a result's buffer (rows, or decoded text) movable; returns the memory to transfer with it. */
export function moveResult(r: SingleResult): ArrayBuffer[] {
  if (!('ok' in r) || !r.ok) return [];
  if ('batch' in r) {
    r.batch.rows = movable(r.batch.rows);
    return [r.batch.rows.buffer as ArrayBuffer];
  }
  r.bytes = movable(r.bytes);
  return [r.bytes.buffer as ArrayBuffer];
}
