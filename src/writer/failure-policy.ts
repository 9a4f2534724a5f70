// What a failed group commit means, and what is done about it: a deadlock is retried, rows the
// database refuses are committed again request by request (so one request's bad rows cannot sink
// the others), a batch that meets stored rows goes through staging, and anything else is the
// database's state: the writer refuses new work for a moment instead of queueing behind it.

export type Failure = 'conflict' | 'retry' | 'unavailable' | 'data';

export const RETRIES = 3;
/** How long a failed database is left alone before the next batch tries it again. */
export const DOWN_MS = 500;

/** PgError, or anything else that failed: ConnectionLost, a refused connection, a timeout. */
export function classify(err: unknown): Failure {
  const e = err as { code?: string; constraint_name?: string };
  const code = typeof e?.code === 'string' ? e.code : '';
  // A month partition's unique index, or an event found stored in an earlier month's partition.
  if (code === '23505' && /^events(_\d{4}_\d{2})?_project_event_key$/.test(e.constraint_name ?? '')) return 'conflict';
  if (code === '40P01' || code === '40001') return 'retry';
  // SQLSTATE classes 22, 23, 42, XX: the data or the statement; anything else is the database's state.
  if (/^(22|23|42|XX)[0-9A-Z]{3}$/.test(code)) return 'data';
  return 'unavailable';
}
