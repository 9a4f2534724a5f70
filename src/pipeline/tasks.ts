// The messages between the main thread and the workers, and the one function that serves them.
// Runs in a worker or, for small bodies, inline on the main thread: the same code either way.
import { type BatchContext, type BatchOutcome, processServerBatch, processWebappBatch, type UserSeen } from './batch.js';
import { decodeJson } from './decode.js';
import { verifySignature } from '../auth/ed25519.js';

export type WorkerTask =
  | { kind: 'server'; body: Uint8Array; gzip: boolean; maxBodyBytes: number; ctx: BatchContext }
  /** The body was decoded on the main thread already (it had to read botId); it is valid JSON. */
  | { kind: 'webapp'; body: Uint8Array; ctx: BatchContext; user: UserSeen }
  | { kind: 'verify'; message: string; signature: string; publicKeys: readonly string[] };

export type WorkerResult = BatchOutcome | { verified: boolean };

export function runTask(task: WorkerTask): WorkerResult {
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
