// The SQL of one group commit, as text for the writer's simple queries. Every statement takes
// whole arrays (one statement per batch, not per request) and touches rows in key order, so two
// writer connections never deadlock on them. Values travel as array literals: each is escaped
// for the array syntax and then for the string literal (standard_conforming_strings is on).
import type { BotSnapshot, UserSeen } from '../base/model.js';
import { EVENT_COLUMNS, QUARANTINE_COLUMNS } from './columns.js';

const COLS = EVENT_COLUMNS.join(', ');
/** Rows moved in from the staging table are read by the report aggregator from the table: no summary holds them. */
const STAGED_COLS = EVENT_COLUMNS.map((c) => (c === 'summarized' ? 'false' : c)).join(', ');
export const COPY_EVENTS = `COPY events (${COLS}) FROM STDIN`;
export const BEGIN_COPY_EVENTS = `BEGIN; ${COPY_EVENTS}`;
export const COPY_QUARANTINE = `COPY quarantine (${QUARANTINE_COLUMNS.join(', ')}) FROM STDIN`;
/** The same through the connection's staging table, when a batch meets rows already stored. */
export const BEGIN_COPY_STAGING = `BEGIN;
CREATE TEMP TABLE IF NOT EXISTS ingest_staging (LIKE events, ord bigint GENERATED ALWAYS AS IDENTITY);
TRUNCATE ingest_staging RESTART IDENTITY;
COPY ingest_staging (${COLS}) FROM STDIN`;

type Scalar = string | number | boolean | null;

function element(v: Scalar): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return String(v);
  const s = v === true ? 'true' : v === false ? 'false' : v;
  return /^[A-Za-z0-9_.:+-]+$/.test(s) && (s.length !== 4 || s.toUpperCase() !== 'NULL')
    ? s
    : `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** An array literal of `type`; NUL cannot occur (the pipeline removes it before anything is stored). */
export function sqlArray(values: readonly Scalar[], type: string): string {
  return `'{${values.map(element).join(',').replaceAll("'", "''")}}'::${type}[]`;
}

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

const MONTH = `(date_trunc('month', now() AT TIME ZONE 'UTC'))::date`;
const LEDGER_CONFLICT = `ON CONFLICT (project_id, month, instance_id, shard) DO UPDATE SET
        events_billed = l.events_billed + excluded.events_billed,
        events_stored = l.events_stored + excluded.events_stored`;

/** Charges the ledger when no event of the batch carries a messenger action: everything stored is billed. */
export function ledgerSql(stored: StoredCount[], shard: Shard): string {
  const rows = stored.filter((s) => s.stored > 0);
  return `EXECUTE tg_ledger(${sqlArray(
    rows.map((s) => s.projectId),
    'uuid',
  )}, ${sqlArray(
    rows.map((s) => s.stored),
    'bigint',
  )}, ${shard.connection}, '${shard.instanceId}')`;
}

/** The ledger rows a writer connection charges: its instance's, and among them its connection's. */
export interface Shard {
  instanceId: string;
  connection: number;
}

/**
 * The billing of a batch with messenger actions, in one statement after its rows are in. An action
 * belongs to the first connection that reports it (within the batch the earliest claim wins; a
 * known action keeps its owner); every other connection gets one report of that action free,
 * stored with billed = false, and pays for any further one, as the owner does for its repeats.
 * Unbills the free reports this transaction stored and charges the ledger; returns (req, n): the
 * unbilled rows per request. Only rows this transaction wrote (xmin) take part, so a redelivery can
 * neither claim an action nor lose an earlier row's billing. The no-op DO UPDATE makes RETURNING
 * yield the owner of an existing action too, even one committed by another connection while this
 * statement waited for it; a free report another transaction took first makes ON CONFLICT DO
 * NOTHING return nothing, so the later one is billed.
 */
const BILLING = `WITH input AS (
      SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::int[])
        WITH ORDINALITY AS t(project_id, action_key, connection_id, event_id, req, ord)
    ), mine AS (
      -- Each input looks its row up by key (LATERAL ... LIMIT 1). As a join, a generic plan made while the partition
      -- was small could instead read every row received between $6 and $7, other transactions' too: ~27 ms a commit
      -- on one writer connection for as long as it lived.
      SELECT DISTINCT ON (i.project_id, i.event_id) i.*
      FROM input i CROSS JOIN LATERAL (
        SELECT FROM events e WHERE e.project_id = i.project_id AND e.event_id = i.event_id
          AND e.received_at BETWEEN $6 AND $7 AND e.xmin = pg_current_xact_id()::xid LIMIT 1
      ) e
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
    ), released AS MATERIALIZED (
      -- Apart from the update, so its join with events has both key columns to look rows up by.
      SELECT c.project_id, c.event_id, c.req FROM candidates c JOIN freed f USING (project_id, action_key, connection_id)
    ), unbilled AS (
      UPDATE events e SET billed = false
      FROM released r
      WHERE e.project_id = r.project_id AND e.event_id = r.event_id AND e.received_at BETWEEN $6 AND $7
      RETURNING r.project_id, r.req
    ), counts AS (
      SELECT project_id, req, count(*)::int AS n FROM unbilled GROUP BY 1, 2
    ), ledger AS (
      INSERT INTO billing_ledger AS l (project_id, month, instance_id, shard, events_billed, events_stored)
      SELECT s.p, ${MONTH}, $11, $10, s.stored - coalesce(u.n, 0), s.stored
      FROM unnest($8::uuid[], $9::bigint[]) AS s(p, stored)
      LEFT JOIN (SELECT project_id, sum(n)::bigint AS n FROM counts GROUP BY 1) u ON u.project_id = s.p
      WHERE s.stored > 0
      ORDER BY s.p
      ${LEDGER_CONFLICT}
    )
    SELECT req, n FROM counts`;

export function billingSql(
  claims: ActionClaim[],
  stored: StoredCount[],
  shard: Shard,
  inserted: ReceivedRange,
): string {
  return `EXECUTE tg_billing(${sqlArray(
    claims.map((c) => c.projectId),
    'uuid',
  )}, ${sqlArray(
    claims.map((c) => c.key),
    'text',
  )},
    ${sqlArray(
      claims.map((c) => c.connection),
      'text',
    )}, ${sqlArray(
      claims.map((c) => c.eventId),
      'uuid',
    )}, ${sqlArray(
      claims.map((c) => c.req),
      'int',
    )},
    '${inserted.from}', '${inserted.to}', ${sqlArray(
      stored.map((s) => s.projectId),
      'uuid',
    )}, ${sqlArray(
      stored.map((s) => s.stored),
      'bigint',
    )},
    ${shard.connection}, '${shard.instanceId}')`;
}

/**
 * The earliest and latest receipt times of a transaction's requests (the service's own ISO text,
 * what the rows carry). Its own rows lie between them, so statements that look for those rows are
 * planned against their partition alone. Bounded by the start of the month before instead, the
 * billing statement spans four partitions, and 10-event requests (every tenth event a messenger
 * action) ran at ~5,550 req/s here against ~6,080.
 */
export interface ReceivedRange {
  from: string;
  to: string;
}

export function receivedRange(receivedAt: readonly string[]): ReceivedRange {
  let from = receivedAt[0]!;
  let to = from;
  for (const t of receivedAt) {
    if (t < from) from = t;
    if (t > to) to = t;
  }
  return { from, to };
}

/** The start of the month before the one `iso` falls in (UTC), as a timestamptz literal. */
export function previousMonthStart(iso: string): string {
  const d = new Date(iso);
  return `'${new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1)).toISOString()}'::timestamptz`;
}

/**
 * Raises a conflict when an event of this transaction was already stored in another month's
 * partition since the start of the month before the batch's (the unique index of a partition sees
 * only its own month). `since` from previousMonthStart.
 */
export function storedBeforeSql(projectIds: string[], eventIds: string[], since: string): string {
  return `SELECT tg_stored_before(EXISTS (
      SELECT 1 FROM unnest(${sqlArray(projectIds, 'uuid')}, ${sqlArray(eventIds, 'uuid')}) AS i(p, id)
      JOIN events e ON e.project_id = i.p AND e.event_id = i.id
      WHERE e.received_at >= ${since} AND e.xmin <> pg_current_xact_id()::xid))`;
}

/**
 * Moves staged rows into events, skipping those already stored (redeliveries, in this month's
 * partition or since the start of the month before) and repeats within the batch (the first wins).
 * `bounds[i]` is the first staging ordinal of request i. Returns (req, inserted).
 */
export function insertStagedSql(bounds: number[], since: string): string {
  return `WITH firsts AS (
      SELECT DISTINCT ON (project_id, event_id) * FROM ingest_staging ORDER BY project_id, event_id, ord
    ), ins AS (
      INSERT INTO events (${COLS})
      SELECT ${STAGED_COLS} FROM firsts f
      WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = f.project_id AND e.event_id = f.event_id AND e.received_at >= ${since})
      ORDER BY project_id, event_id
      ON CONFLICT DO NOTHING
      RETURNING project_id, event_id
    )
    SELECT width_bucket(f.ord, ${sqlArray(bounds, 'bigint')}) - 1 AS req, count(*)::int AS inserted
    FROM ins JOIN firsts f USING (project_id, event_id)
    GROUP BY 1`;
}

/**
 * The report summaries of a commit's requests (src/pipeline/summary.ts), one row for the commit, spanning their
 * receipt times. Only a commit whose rows all went in by the plain COPY writes one: each of its rows is new.
 */
export function insertSummarySql(
  sections: readonly Uint8Array[],
  sessions: readonly Uint8Array[],
  received: ReceivedRange,
): string {
  const hex = Buffer.concat(sections).toString('hex');
  const sessionHex = Buffer.concat(sessions).toString('hex');
  return `INSERT INTO report_summaries (received_from, received_to, summary, sessions) VALUES ('${received.from}', '${received.to}', '\\x${hex}', ${sessionHex === '' ? 'NULL' : `'\\x${sessionHex}'`})`;
}

export interface UserRow extends UserSeen {
  projectId: string;
}

const PROFILE_FIELDS = ['username', 'first_name', 'last_name', 'language_code', 'is_premium'];

/**
 * Profiles: `tg_profiles_authoritative` (verified initData) replaces every profile field;
 * `tg_profiles` fills in what it carries and keeps the rest.
 */
function prepareProfiles(name: string, authoritative: boolean): string {
  const set = (f: string) => (authoritative ? `excluded.${f}` : `coalesce(excluded.${f}, u.${f})`);
  return `PREPARE ${name}(uuid[], bigint[], text[], text[], text[], text[], bool[]) AS
    INSERT INTO users AS u (project_id, messenger_user_id, username, first_name, last_name, language_code, is_premium, first_seen, last_seen)
    SELECT p, id, un, fn, ln, lc, ip, now(), now()
    FROM unnest($1, $2, $3, $4, $5, $6, $7) AS s(p, id, un, fn, ln, lc, ip)
    ORDER BY p, id
    ON CONFLICT (project_id, messenger_user_id) DO UPDATE SET
      ${PROFILE_FIELDS.map((f) => `${f} = ${set(f)}`).join(', ')},
      last_seen = greatest(u.last_seen, excluded.last_seen)`;
}

/**
 * The statements a commit runs after its COPY, prepared once per writer connection: planning them
 * cost more than running them (measured here, PostgreSQL CPU per commit: the ledger charge about
 * 170 µs as a fresh statement against 50 µs prepared, a user upsert about 100 µs more, the billing
 * statement about 450 µs more).
 */
export const PREPARE_STATEMENTS = [
  // Every statement here finds rows by key, and the billing statement's generic plan, made while
  // a partition may still be small, must not scan one whole once it has grown.
  'SET enable_seqscan = off',
  `PREPARE tg_billing(uuid[], text[], text[], uuid[], int[], timestamptz, timestamptz, uuid[], bigint[], smallint, uuid) AS ${BILLING}`,
  `PREPARE tg_ledger(uuid[], bigint[], smallint, uuid) AS
    INSERT INTO billing_ledger AS l (project_id, month, instance_id, shard, events_billed, events_stored)
    SELECT p, ${MONTH}, $4, $3, n, n FROM unnest($1, $2) AS s(p, n) ORDER BY p
    ${LEDGER_CONFLICT}`,
  // Bare rows for users seen in events: first_seen on insert, last_seen moved forward otherwise, but
  // only when it is a minute old (its resolution): a row another writer or instance has just moved is
  // left as it is, which spares a new row version.
  // Each id names its project by number ($1[k]): a batch's ids mostly share one project, whose id
  // would otherwise be sent and parsed once per user.
  `PREPARE tg_sightings(uuid[], int[], bigint[]) AS
    INSERT INTO users AS u (project_id, messenger_user_id, first_seen, last_seen)
    SELECT $1[k], id, now(), now() FROM unnest($2, $3) AS s(k, id) ORDER BY 1, 2
    ON CONFLICT (project_id, messenger_user_id) DO UPDATE SET last_seen = excluded.last_seen
    WHERE u.last_seen < excluded.last_seen - interval '1 minute'`,
  prepareProfiles('tg_profiles', false),
  prepareProfiles('tg_profiles_authoritative', true),
].join(';\n');

/** `byProject`: the user ids to sight, by project id. */
export function sightingsSql(byProject: ReadonlyMap<string, readonly string[]>): string {
  const numbers: number[] = [];
  const ids: string[] = [];
  let k = 0;
  for (const list of byProject.values()) {
    k++;
    for (const id of list) {
      numbers.push(k);
      ids.push(id);
    }
  }
  return `EXECUTE tg_sightings(${sqlArray([...byProject.keys()], 'uuid')}, ${sqlArray(numbers, 'int')}, ${sqlArray(ids, 'bigint')})`;
}

export function upsertUsersSql(rows: UserRow[], authoritative: boolean): string {
  const col = <T extends Scalar>(f: (u: UserRow) => T) => rows.map(f);
  return `EXECUTE ${authoritative ? 'tg_profiles_authoritative' : 'tg_profiles'}(${sqlArray(
    col((r) => r.projectId),
    'uuid',
  )}, ${sqlArray(
    col((r) => r.id),
    'bigint',
  )},
    ${sqlArray(
      col((r) => r.username ?? null),
      'text',
    )}, ${sqlArray(
      col((r) => r.firstName ?? null),
      'text',
    )},
    ${sqlArray(
      col((r) => r.lastName ?? null),
      'text',
    )}, ${sqlArray(
      col((r) => r.languageCode ?? null),
      'text',
    )},
    ${sqlArray(
      col((r) => r.isPremium ?? null),
      'bool',
    )})`;
}

export interface BotRow extends BotSnapshot {
  botId: string;
}

/** Descriptive fields only: the messenger id, which a constraint keeps unique, is the admin API's alone. */
export function updateBotsSql(rows: BotRow[]): string {
  return `UPDATE bots b SET
      name = coalesce(s.name, b.name),
      description = coalesce(s.description, b.description),
      stars_amount = coalesce(s.stars, b.stars_amount),
      snapshot_at = now()
    FROM unnest(${sqlArray(
      rows.map((r) => r.botId),
      'uuid',
    )}, ${sqlArray(
      rows.map((r) => r.name),
      'text',
    )}, ${sqlArray(
      rows.map((r) => r.description),
      'text',
    )},
                ${sqlArray(
                  rows.map((r) => (r.starsAmount === null ? null : String(r.starsAmount))),
                  'numeric',
                )})
      AS s(bot_id, name, description, stars)
    WHERE b.bot_id = s.bot_id`;
}
