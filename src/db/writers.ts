// When every row received before a moment is committed: the database's now, held back by the oldest writer
// transaction still open. What reads the events table by time of receipt (the reports' history, the lake) reads only
// behind it, so a transaction slow to commit is never passed over.
import type { Sql } from './connect.js';

/** The writer connections, by the application_name the writer gives them (src/writer/group-commit.ts). */
const WRITERS = 'tg-ingest writer %';
/** How long an open writer transaction can hold a reader back. */
export const HOLD_BACK_MS = 600_000;
const HOLD_BACK_MAX = `${HOLD_BACK_MS / 1000} seconds`;

/**
 * The SQL of that moment, as a timestamptz: only the service's writers count (a psql session left open does not), for
 * at most HOLD_BACK_MS.
 */
export const WRITERS_START_SQL = `least(now(), (
  SELECT min(greatest(xact_start, now() - '${HOLD_BACK_MAX}'::interval)) FROM pg_stat_activity
  WHERE datname = current_database() AND application_name LIKE '${WRITERS}' AND backend_xid IS NOT NULL))`;

/** That moment, in ms since 1970. */
export async function writersStart(sql: Sql): Promise<number> {
  const [r] = await sql.unsafe<{ now: number }[]>(
    `SELECT (extract(epoch FROM ${WRITERS_START_SQL}) * 1000)::float8 AS now`,
  );
  return r!.now;
}
