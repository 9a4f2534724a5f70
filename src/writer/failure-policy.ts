// What a failed group commit means, and what is done about it. Only what is known to be the
// database's state makes the writer back off (refusing new work for a moment instead of queueing
// behind it): a lost or refused connection, a timeout, SQLSTATE classes 08 (connection), 53
// (resources), 57 (operator intervention: shutdown, cancel), 58 (system), and a read-only
// server (25006, a replica after a failover). A deadlock or serialization failure is retried. A
// batch that meets stored rows goes through staging. Anything else may be one request's data (a
// value PostgreSQL cannot index or store): the batch is split until each request learns its own
// fate, and a request whose rows are still refused alone is answered 400, never its neighbours
// (unless every request of the batch was refused: then the fault is not theirs, see group-commit.ts).

export type Failure = 'conflict' | 'retry' | 'unavailable' | 'data';

export const RETRIES = 3;
/** How long a failed database is left alone before the next batch tries it again. */
export const DOWN_MS = 500;

const STATE_CLASSES = /^(08|53|57|58)[0-9A-Z]{3}$/;
/**
 * What only a request's values cause: data exceptions, integrity violations, program limits (an index row too large).
 */
export const REQUEST_DATA = /^(22|23|54)[0-9A-Z]{3}$/;
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** PgError, or anything else that failed: ConnectionLost, a refused connection, a timeout. */
export function classify(err: unknown): Failure {
  const e = err as { code?: unknown; constraint_name?: string };
  const code = typeof e?.code === 'string' ? e.code : '';
  // A month partition's unique index, or an event found stored in an earlier month's partition.
  if (code === '23505' && /^events(_\d{4}_\d{2})?_project_event_key$/.test(e.constraint_name ?? '')) return 'conflict';
  if (code === '40P01' || code === '40001') return 'retry';
  if (STATE_CLASSES.test(code) || code === '25006') return 'unavailable';
  // The server answered with an error of the statement or its data.
  if (SQLSTATE.test(code)) return 'data';
  // No SQLSTATE: the connection (ConnectionLost, ECONNREFUSED, ETIMEDOUT, …) or a timeout.
  return 'unavailable';
}
