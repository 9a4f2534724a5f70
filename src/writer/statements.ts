// The SQL of one group commit. Every statement takes whole arrays (one round trip per batch, not
// per request) and touches rows in key order, so two writer connections never deadlock on them.
import type { Sql } from '../db/connect.js';
import { EVENT_COLUMNS } from '../pipeline/copy-text.js';
import type { BotSnapshot, UserSeen } from '../pipeline/batch.js';

const COLS = EVENT_COLUMNS.join(', ');
export const COPY_EVENTS = `COPY events (${COLS}) FROM STDIN`;
export const COPY_STAGING = `COPY ingest_staging (${COLS}) FROM STDIN`;

export interface ActionClaim {
  projectId: string;
  key: string;
  connection: string;
}

const ownerKey = (projectId: string, key: string) => `${projectId}\u0000${key}`;

/**
 * Records who reported each messenger action first and returns every action's owner.
 * Within the batch the earliest claim wins; an action already known keeps its owner.
 */
export async function claimActions(sql: Sql, claims: ActionClaim[]): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  if (claims.length === 0) return owners;
  const rows = await sql<{ project_id: string; action_key: string; connection_id: string }[]>`
    WITH input AS (
      SELECT * FROM unnest(${claims.map((c) => c.projectId)}::uuid[], ${claims.map((c) => c.key)}::text[], ${claims.map((c) => c.connection)}::text[])
        WITH ORDINALITY AS t(project_id, action_key, connection_id, ord)
    ), firsts AS (
      SELECT DISTINCT ON (project_id, action_key) project_id, action_key, connection_id
      FROM input ORDER BY project_id, action_key, ord
    ), ins AS (
      INSERT INTO billing_actions (project_id, action_key, connection_id)
      SELECT project_id, action_key, connection_id FROM firsts ORDER BY project_id, action_key
      ON CONFLICT DO NOTHING
      RETURNING project_id, action_key, connection_id
    )
    SELECT project_id, action_key, connection_id FROM ins
    UNION ALL
    SELECT b.project_id, b.action_key, b.connection_id FROM billing_actions b JOIN firsts f USING (project_id, action_key)`;
  for (const r of rows) owners.set(ownerKey(r.project_id, r.action_key), r.connection_id);
  // A claim that raced with another connection's uncommitted insert is visible only to a new statement.
  const missing = claims.filter((c) => !owners.has(ownerKey(c.projectId, c.key)));
  if (missing.length > 0) {
    const late = await sql<{ project_id: string; action_key: string; connection_id: string }[]>`
      SELECT b.project_id, b.action_key, b.connection_id
      FROM billing_actions b
      JOIN unnest(${missing.map((c) => c.projectId)}::uuid[], ${missing.map((c) => c.key)}::text[]) AS m(project_id, action_key) USING (project_id, action_key)`;
    for (const r of late) owners.set(ownerKey(r.project_id, r.action_key), r.connection_id);
  }
  return owners;
}

export function ownerOf(owners: Map<string, string>, projectId: string, key: string): string | undefined {
  return owners.get(ownerKey(projectId, key));
}

/** Prepares the per-connection staging table used when a batch meets rows that already exist. */
export async function resetStaging(sql: Sql): Promise<void> {
  await sql.unsafe(`CREATE TEMP TABLE IF NOT EXISTS ingest_staging (LIKE events, ord bigint GENERATED ALWAYS AS IDENTITY)`);
  await sql.unsafe(`TRUNCATE ingest_staging RESTART IDENTITY`);
}

export interface StagedCounts {
  /** Index of the request in the batch. */
  req: number;
  inserted: number;
  notBilled: number;
}

/**
 * Moves staged rows into events, skipping those already stored (redeliveries) and repeats within
 * the batch (the first wins). `bounds[i]` is the first staging ordinal of request i.
 */
export async function insertStaged(sql: Sql, bounds: number[]): Promise<StagedCounts[]> {
  const rows = await sql<{ req: number; inserted: number; not_billed: number }[]>`
    WITH firsts AS (
      SELECT DISTINCT ON (project_id, event_id) * FROM ingest_staging ORDER BY project_id, event_id, ord
    ), ins AS (
      INSERT INTO events (${sql.unsafe(COLS)})
      SELECT ${sql.unsafe(COLS)} FROM firsts ORDER BY project_id, event_id
      ON CONFLICT (project_id, event_id) DO NOTHING
      RETURNING project_id, event_id, billed
    )
    SELECT width_bucket(f.ord, ${bounds}::bigint[]) - 1 AS req,
           count(*)::int AS inserted,
           (count(*) FILTER (WHERE NOT ins.billed))::int AS not_billed
    FROM ins JOIN firsts f USING (project_id, event_id)
    GROUP BY 1`;
  return rows.map((r) => ({ req: r.req, inserted: r.inserted, notBilled: r.not_billed }));
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

export function updateBots(sql: Sql, rows: BotRow[]) {
  return sql`
    UPDATE bots b SET
      name = coalesce(s.name, b.name),
      description = coalesce(s.description, b.description),
      stars_amount = coalesce(s.stars, b.stars_amount),
      messenger_bot_id = coalesce(b.messenger_bot_id, s.mid),
      snapshot_at = now()
    FROM unnest(${rows.map((r) => r.botId)}::uuid[], ${rows.map((r) => r.messengerBotId)}::bigint[],
                ${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.description)}::text[],
                ${rows.map((r) => (r.starsAmount === null ? null : String(r.starsAmount)))}::numeric[])
      AS s(bot_id, mid, name, description, stars)
    WHERE b.bot_id = s.bot_id`;
}

export interface LedgerRow {
  projectId: string;
  billed: number;
  stored: number;
}

export function addToLedger(sql: Sql, rows: LedgerRow[]) {
  return sql`
    INSERT INTO billing_ledger AS l (project_id, month, events_billed, events_stored)
    SELECT p, (date_trunc('month', now() AT TIME ZONE 'UTC'))::date, b, s
    FROM unnest(${rows.map((r) => r.projectId)}::uuid[], ${rows.map((r) => r.billed)}::bigint[], ${rows.map((r) => r.stored)}::bigint[]) AS t(p, b, s)
    ORDER BY p
    ON CONFLICT (project_id, month) DO UPDATE SET
      events_billed = l.events_billed + excluded.events_billed,
      events_stored = l.events_stored + excluded.events_stored`;
}
