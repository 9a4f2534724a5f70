// The messages between the main thread and the workers, and the one function that serves them.
// Runs in a worker or, for small bodies, inline on the main thread: the same code either way.
import { type BatchContext, type BatchOutcome, processServerBatch, processWebappBatch, type UserSeen } from './batch.js';
import { decodeJson } from './decode.js';
import { verifySignature } from '../auth/ed25519.js';

export type SingleTask =
  | { kind: 'server'; body: Uint8Array; gzip: boolean; maxBodyBytes: number; ctx: BatchContext }
  /** The body was decoded on the main thread already (it had to read botId); it is valid JSON. */
  | { kind: 'webapp'; body: Uint8Array; ctx: BatchContext; user: UserSeen }
  | { kind: 'verify'; message: string; signature: string; publicKeys: readonly string[] };

/** Small requests travel to a worker in groups: one message for many, one wake-up of the worker. */
export type WorkerTask = SingleTask | { kind: 'group'; tasks: SingleTask[] };

export type SingleResult = BatchOutcome | { verified: boolean };
export type WorkerResult = SingleResult | { results: SingleResult[] };

export function runTask(task: WorkerTask): WorkerResult {
  if (task.kind === 'group') return { results: task.tasks.map(runSingle) };
  return runSingle(task);
}

function runSingle(task: SingleTask): SingleResult {
  switch (task.kind) {
    case 'server': {
      const decoded = decodeJson(task.body, task.gzip, task.maxBodyBytes);
      if (!decoded.ok) return decoded;
      return processServerBatch(decoded.value, task.ctx, decoded.bytes.byteLength);
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
