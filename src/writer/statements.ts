// The SQL of one group commit. Every statement takes whole arrays (one round trip per batch, not
// per request) and touches rows in key order, so two writer connections never deadlock on them.
import type { Sql } from '../db/connect.js';
import { EVENT_COLUMNS } from '../pipeline/copy-text.js';
import type { BotSnapshot, UserSeen } from '../model.js';
import { sameSession, type Session, SessionLost } from './copy-in.js';

const COLS = EVENT_COLUMNS.join(', ');
export const COPY_EVENTS = `COPY events (${COLS}) FROM STDIN`;
/** A transaction and its rows in one message (see copy-in.ts). */
export const BEGIN_COPY_EVENTS = `BEGIN; ${COPY_EVENTS}`;
/** The same through the per-connection staging table, when a batch meets rows already stored. */
export const BEGIN_COPY_STAGING = `BEGIN;
CREATE TEMP TABLE IF NOT EXISTS ingest_staging (LIKE events, ord bigint GENERATED ALWAYS AS IDENTITY);
TRUNCATE ingest_staging RESTART IDENTITY;
COPY ingest_staging (${COLS}) FROM STDIN`;

export interface ActionClaim {
  projectId: string;
  key: string;
  connection: string;
  eventId: string;
  /** Index of the request in the batch. */
  req: number;
}

export interface StoredCount {
  projectId: string;
  stored: number;
}

/**
 * The billing of a batch, in one statement after its rows are in. A messenger action belongs to the
 * first connection that reports it (within the batch the earliest claim wins; a known action keeps
 * its owner); every other connection gets one report of that action free, stored with
 * billed = false, and pays for any further one, as the owner does for its repeats. Unbills the free
 * reports this transaction stored and charges the ledger; returns the unbilled rows per request.
 * Only rows this transaction wrote (xmin) take part, so a redelivery can neither claim an action
 * nor lose an earlier row's billing. The no-op DO UPDATE makes RETURNING yield the owner of an
 * existing action too, even one committed by another connection while this statement waited for it;
 * a free report another transaction took first makes ON CONFLICT DO NOTHING return nothing, so the
 * later one is billed.
 */
export function settleBilling(sql: Sql, claims: ActionClaim[], stored: StoredCount[], shard: number, session: Session) {
  // Sent at once (execute), so it precedes whatever the caller queues after it. It changes nothing
  // unless it runs in the transaction's own session (pg_backend_pid), and then says so (req -1).
  const query = sql<{ req: number; n: number }[]>`
    WITH input AS (
      SELECT * FROM unnest(${claims.map((c) => c.projectId)}::uuid[], ${claims.map((c) => c.key)}::text[],
                           ${claims.map((c) => c.connection)}::text[], ${claims.map((c) => c.eventId)}::uuid[], ${claims.map((c) => c.req)}::int[])
        WITH ORDINALITY AS t(project_id, action_key, connection_id, event_id, req, ord)
      WHERE pg_backend_pid() = ${session.pid}
    ), mine AS (
      SELECT DISTINCT ON (i.project_id, i.event_id) i.*
      FROM input i JOIN events e ON e.project_id = i.project_id AND e.event_id = i.event_id AND e.xmin = pg_current_xact_id()::xid
      ORDER BY i.project_id, i.event_id, i.ord
    ), firsts AS (
      SELECT DISTINCT ON (project_id, action_key) project_id, action_key, connection_id
      FROM mine ORDER BY project_id, action_key, ord
    ), claimed AS (
      INSERT INTO billing_actions AS b (project_id, action_key, connection_id)
      SELECT project_id, action_key, connection_id FROM firsts ORDER BY project_id, action_key
      ON CONFLICT (project_id, action_key) DO UPDATE SET connection_id = b.connection_id
      RETURNING project_id, action_key, connection_id
    ), candidates AS (
      -- The first report of each connection that does not own the action. NOT IN runs as a hashed
      -- subplan: CTE row estimates are useless here and a join of the two would loop over every pair.
      SELECT DISTINCT ON (project_id, action_key, connection_id) * FROM mine
      WHERE (project_id, action_key, connection_id) NOT IN (SELECT project_id, action_key, connection_id FROM claimed)
      ORDER BY project_id, action_key, connection_id, ord
    ), freed AS (
      INSERT INTO billing_free_reports (project_id, action_key, connection_id)
      SELECT project_id, action_key, connection_id FROM candidates ORDER BY 1, 2, 3
      ON CONFLICT DO NOTHING
      RETURNING project_id, action_key, connection_id
    ), unbilled AS (
      UPDATE events e SET billed = false
      FROM candidates c JOIN freed f USING (project_id, action_key, connection_id)
      WHERE e.project_id = c.project_id AND e.event_id = c.event_id
      RETURNING c.project_id, c.req
    ), counts AS (
      SELECT project_id, req, count(*)::int AS n FROM unbilled GROUP BY 1, 2
    ), ledger AS (
      INSERT INTO billing_ledger AS l (project_id, month, shard, events_billed, events_stored)
      SELECT s.p, (date_trunc('month', now() AT TIME ZONE 'UTC'))::date, ${shard}::smallint, s.stored - coalesce(u.n, 0), s.stored
      FROM unnest(${stored.map((s) => s.projectId)}::uuid[], ${stored.map((s) => s.stored)}::bigint[]) AS s(p, stored)
      LEFT JOIN (SELECT project_id, sum(n)::bigint AS n FROM counts GROUP BY 1) u ON u.project_id = s.p
      WHERE s.stored > 0 AND pg_backend_pid() = ${session.pid}
      ORDER BY s.p
      ON CONFLICT (project_id, month, shard) DO UPDATE SET
        events_billed = l.events_billed + excluded.events_billed,
        events_stored = l.events_stored + excluded.events_stored
    )
    SELECT req, n FROM counts
    UNION ALL SELECT -1, 0 WHERE pg_backend_pid() <> ${session.pid}`.execute();
  return query.then((rows) => {
    if (!sameSession(rows.state as Session, session) || rows.some((r) => r.req === -1)) throw new SessionLost();
    const unbilled = new Map<number, number>();
    for (const r of rows) unbilled.set(r.req, (unbilled.get(r.req) ?? 0) + r.n);
    return unbilled;
  });
}

export interface StagedCounts {
  /** Index of the request in the batch. */
  req: number;
  inserted: number;
}

/**
 * Moves staged rows into events, skipping those already stored (redeliveries) and repeats within
 * the batch (the first wins). `bounds[i]` is the first staging ordinal of request i.
 */
export async function insertStaged(sql: Sql, bounds: number[], session: Session): Promise<StagedCounts[]> {
  const rows = await sql<{ req: number; inserted: number }[]>`
    WITH firsts AS (
      SELECT DISTINCT ON (project_id, event_id) * FROM ingest_staging ORDER BY project_id, event_id, ord
    ), ins AS (
      INSERT INTO events (${sql.unsafe(COLS)})
      SELECT ${sql.unsafe(COLS)} FROM firsts ORDER BY project_id, event_id
      ON CONFLICT (project_id, event_id) DO NOTHING
      RETURNING project_id, event_id
    )
    SELECT width_bucket(f.ord, ${bounds}::bigint[]) - 1 AS req, count(*)::int AS inserted
    FROM ins JOIN firsts f USING (project_id, event_id)
    GROUP BY 1`;
  if (!sameSession(rows.state as Session, session)) throw new SessionLost();
  return rows.map((r) => ({ req: r.req, inserted: r.inserted }));
}

export interface UserRow extends UserSeen {
  projectId: string;
}

// postgres.js infers an array's type from its values and gets boolean arrays wrong; booleans travel as text.
function col<T>(rows: UserRow[], f: (u: UserRow) => T): T[] {
  return rows.map(f);
}

/**
 * Bare rows for users seen in events: first_seen on insert, last_seen moved forward otherwise.
 * Ids travel as one comma-joined string each: far cheaper to send than a parameter array per row.
 */
export function recordSightings(sql: Sql, projectIds: string[], userIds: string[]) {
  return sql`
    INSERT INTO users AS u (project_id, messenger_user_id, first_seen, last_seen)
    SELECT p, id, now(), now()
    FROM unnest(string_to_array(${projectIds.join(',')}, ',')::uuid[], string_to_array(${userIds.join(',')}, ',')::bigint[]) AS s(p, id)
    ORDER BY p, id
    ON CONFLICT (project_id, messenger_user_id) DO UPDATE SET last_seen = greatest(u.last_seen, excluded.last_seen)`;
}

/**
 * Upserts profiles. `authoritative` rows (from verified initData) replace every profile field;
 * the others fill in what they carry and keep the rest.
 */
export function upsertUsers(sql: Sql, rows: UserRow[], authoritative: boolean) {
  const set = (f: string) => (authoritative ? `excluded.${f}` : `coalesce(excluded.${f}, u.${f})`);
  const fields = ['username', 'first_name', 'last_name', 'language_code', 'is_premium'];
  return sql`
    INSERT INTO users AS u (project_id, messenger_user_id, username, first_name, last_name, language_code, is_premium, first_seen, last_seen)
    SELECT p, id, un, fn, ln, lc, ip, now(), now()
    FROM unnest(${col(rows, (r) => r.projectId)}::uuid[], ${col(rows, (r) => r.id)}::bigint[],
                ${col(rows, (r) => r.username ?? null)}::text[], ${col(rows, (r) => r.firstName ?? null)}::text[],
                ${col(rows, (r) => r.lastName ?? null)}::text[], ${col(rows, (r) => r.languageCode ?? null)}::text[],
                ${col(rows, (r) => (r.isPremium == null ? null : String(r.isPremium)))}::text[]::bool[])
      AS s(p, id, un, fn, ln, lc, ip)
    ORDER BY p, id
    ON CONFLICT (project_id, messenger_user_id) DO UPDATE SET
      ${sql.unsafe(fields.map((f) => `${f} = ${set(f)}`).join(', '))},
      last_seen = greatest(u.last_seen, excluded.last_seen)`;
}

export interface BotRow extends BotSnapshot {
  botId: string;
}

/** Descriptive fields only: the messenger id, which a constraint keeps unique, is the admin API's alone. */
export function updateBots(sql: Sql, rows: BotRow[]) {
  return sql`
    UPDATE bots b SET
      name = coalesce(s.name, b.name),
      description = coalesce(s.description, b.description),
      stars_amount = coalesce(s.stars, b.stars_amount),
      snapshot_at = now()
    FROM unnest(${rows.map((r) => r.botId)}::uuid[], ${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.description)}::text[],
                ${rows.map((r) => (r.starsAmount === null ? null : String(r.starsAmount)))}::numeric[])
      AS s(bot_id, name, description, stars)
    WHERE b.bot_id = s.bot_id`;
}
