// erasure-50m: on the 50-million-row table of b-large-50m, 1,000 users with 10 events each are erased while b-large
// runs beside the eraser: users of the preload, spread through both months (each with the five events of a visit where
// the preload put it), with five more events each stored since, at the end of the current month. Its events/s are
// compared with b-large on the same table just before and just after, without an erasure: a later run on that table is
// slower by itself, so b-large-50m is no baseline for it. The request is made through the
// store the admin API uses; the service's eraser takes it up within a second.
import { PrivacyStore } from '../src/privacy/store.js';
import type { Database } from './lib/env.js';
import { PER_VISIT, USERS } from './lib/preload.js';

export const ERASURE_USERS = 1000;
/** Stored since the preload, per user, besides the five of their visit. */
const PLANTED_PER_USER = 5;

/** The users of visits spread evenly through the preload (each visit's user, as preload.ts names it). */
function spreadUsers(total: number): string[] {
  const visits = Math.floor(total / PER_VISIT);
  return Array.from({ length: ERASURE_USERS }, (_, k) => {
    const visit = BigInt(Math.floor((k * visits) / ERASURE_USERS));
    return String(100_000_000n + ((visit * 7919n) % BigInt(USERS)));
  });
}

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

/** Their newer events, then the erasure request: called before the warm-up, so the eraser runs through the window. */
export async function plantAndRequest(
  db: Database,
  ids: { projectId: string; botId: string },
  total: number,
): Promise<void> {
  const users = spreadUsers(total);
  await db.sql`
    INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at, platform_user_id,
                        origin, channel, tg, billed, summarized)
    SELECT ${ids.projectId}, ${ids.botId}, gen_random_uuid(), 'screen_view', 'interaction', t, t, u::bigint, 'custom',
           'bot_api', NULL, true, true
    FROM unnest(${users}::text[]) u, generate_series(1, ${PLANTED_PER_USER}) k,
    LATERAL (SELECT now() - interval '1 hour' - k * interval '1 minute' AS t) AS ts`;
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
