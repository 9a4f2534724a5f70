// erasure-50m: on the 50-million-row table of b-large-50m, 1,000 users with 10 events each (five in each month's
// partition) are erased while b-large runs beside the eraser. Its events/s are compared with b-large on the same
// table just before and just after, without an erasure: a later run on that table is slower by itself (0.79× the
// first, measured), so b-large-50m is no baseline for it. The request is made through the store the admin API uses; the
// service's eraser takes it up within a second.
import { PrivacyStore } from '../src/privacy/store.js';
import type { Database } from './lib/env.js';

export const ERASURE_USERS = 1000;
const EVENTS_PER_USER = 10;
/** Well clear of the preloaded users (100000000 + 10 million). */
const FIRST_USER = 900_000_000;

/**
 * Before the three runs: the tables vacuumed now, and autovacuum kept off the events partitions until `resume`. A
 * partition of 25M rows is due for an insert-triggered autovacuum after 5M inserts, about two runs' worth: left
 * alone it lands in one of the three runs and not the others (0.65× once, against 0.90× without it), and the ratio
 * then measures the vacuum, not the erasure.
 */
export async function settle(db: Database): Promise<{ resume(): Promise<void> }> {
  const parts = await db.sql<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass`;
  for (const { name } of parts) await db.sql.unsafe(`ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
  for (;;) {
    const [{ n }] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE backend_type = 'autovacuum worker' AND datname = current_database()`;
    if (n === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  await db.sql`VACUUM ANALYZE`;
  await db.sql`CHECKPOINT`;
  return {
    async resume() {
      for (const { name } of parts) await db.sql.unsafe(`ALTER TABLE ${name} RESET (autovacuum_enabled)`);
    },
  };
}

/** Their events, then the erasure request: called before the warm-up, so the eraser runs through the window. */
export async function plantAndRequest(db: Database, ids: { projectId: string; botId: string }): Promise<void> {
  await db.sql`
    INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at, platform_user_id,
                        origin, channel, tg, billed)
    SELECT ${ids.projectId}, ${ids.botId}, gen_random_uuid(), 'screen_view', 'interaction', t, t, ${FIRST_USER} + u, 'custom',
           'bot_api', NULL, true
    FROM generate_series(0, ${ERASURE_USERS - 1}) u, generate_series(0, ${EVENTS_PER_USER - 1}) k,
    LATERAL (SELECT CASE WHEN k % 2 = 0 THEN date_trunc('month', now()) - interval '10 days' - k * interval '1 hour'
                         ELSE now() - interval '1 hour' - k * interval '1 minute' END AS t) AS ts`;
  const users = Array.from({ length: ERASURE_USERS }, (_, u) => String(FIRST_USER + u));
  await new PrivacyStore(db.sql).request(ids.projectId, users, false);
}

/** Waits for the erasure to finish: its time (from request to done) and what it deleted. */
export async function awaitErasure(db: Database, say: (s: string) => void): Promise<Record<string, number | string>> {
  for (;;) {
    const [e] = await db.sql<{ status: string; s: number | null; deleted: string; error: string | null }[]>`
      SELECT status, extract(epoch FROM finished_at - created_at)::float8 AS s, deleted_events::text AS deleted, error
      FROM erasures ORDER BY created_at DESC LIMIT 1`;
    if (e!.status === 'done' || e!.status === 'failed') {
      say(
        `erasure-50m: ${e!.status} in ${e!.s?.toFixed(1)} s, ${e!.deleted} events deleted${e!.error ? ` (${e!.error})` : ''}`,
      );
      return { 'erasure s': e!.s ?? Number.NaN, 'erased events': Number(e!.deleted), 'erasure status': e!.status };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
