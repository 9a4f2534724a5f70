// Everything held on one user, as NDJSON, produced as the client reads it: the profile, the first campaign, the
// suppression, the days they were active and their payments in the report tables, the billing keys of messages in
// their private chat, every stored event of every
// partition (read through a cursor, never the whole history in memory), and the quarantined events that name
// them. The last line counts what came before, so a reader can tell a whole export from a cut one.
import type { Sql } from '../db/connect.js';
import { USER_IN_QUARANTINE } from './store.js';

/** Rows fetched per cursor step: a stored event can be megabytes. */
const CURSOR_ROWS = 50;
/** A chunk is sent once it holds this much. */
const CHUNK_BYTES = 1024 * 1024;
/**
 * An export holds a database connection (and a snapshot) while it runs: past this it is cut (no `end` line), so a
 * client that reads slowly cannot hold one for ever.
 */
export const EXPORT_MAX_MS = 10 * 60_000;

export class ExportTooLong extends Error {}

/** Exports running in this process: each holds a database connection from the shared pool. */
let running = 0;
export const MAX_EXPORTS = 2;
export const exportsRunning = (): number => running;

export async function* exportUser(
  sql: Sql,
  projectId: string,
  userId: string,
  maxMs = EXPORT_MAX_MS,
): AsyncGenerator<string> {
  running++;
  try {
    yield* produce(sql, projectId, userId, maxMs);
  } finally {
    running--;
  }
}

async function* produce(sql: Sql, projectId: string, userId: string, maxMs: number): AsyncGenerator<string> {
  const started = performance.now();
  const line = (type: string, json: string) => `{"type":${JSON.stringify(type)},"data":${json}}\n`;
  const counts = {
    profile: 0,
    campaign: 0,
    suppression: 0,
    activeDays: 0,
    payments: 0,
    billingKeys: 0,
    events: 0,
    quarantined: 0,
  };
  const TYPE = { activeDays: 'active_day', payments: 'payment', billingKeys: 'billing_key', events: 'event' } as Record<
    string,
    string
  >;
  const one = async (type: keyof typeof counts, text: string, params: unknown[]) => {
    const rows = await sql.unsafe<{ j: string }[]>(text, params as never[]);
    counts[type] += rows.length;
    return rows.map((r) => line(TYPE[type] ?? type, r.j)).join('');
  };
  const head =
    (await one(
      'profile',
      `SELECT (to_jsonb(u) - 'project_id')::text AS j FROM users u WHERE project_id = $1 AND messenger_user_id = $2::bigint`,
      [projectId, userId],
    )) +
    (await one(
      'campaign',
      `SELECT jsonb_build_object('firstDay', first_day, 'firstCampaign', first_campaign, 'latestCampaign', last_campaign)::text AS j
       FROM report_users WHERE project_id = $1 AND user_id = $2::bigint`,
      [projectId, userId],
    )) +
    (await one(
      'suppression',
      `SELECT jsonb_build_object('erasureId', erasure_id, 'createdAt', created_at)::text AS j
       FROM suppressions WHERE project_id = $1 AND user_id = $2::bigint`,
      [projectId, userId],
    )) +
    (await one(
      'activeDays',
      `SELECT to_jsonb(day)::text AS j FROM report_active WHERE project_id = $1 AND user_id = $2::bigint ORDER BY day`,
      [projectId, userId],
    )) +
    (await one(
      'payments',
      `SELECT jsonb_build_object('kind', kind, 'chargeKey', charge_key, 'currency', currency, 'amount', amount, 'day', day)::text AS j
       FROM report_payments WHERE project_id = $1 AND user_id = $2::bigint ORDER BY day`,
      [projectId, userId],
    )) +
    // Messages in their private chat, as the billing ledger keys them (the chat's id is the user's).
    (await one(
      'billingKeys',
      `SELECT to_jsonb(action_key)::text AS j FROM billing_actions
       WHERE project_id = $1 AND action_key >= 'message:' || $2 || ':' AND action_key < 'message:' || $2 || ';' ORDER BY 1`,
      [projectId, userId],
    ));
  if (head !== '') yield head;
  const parts = await sql<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$' ORDER BY 1`;
  const queries: { type: 'events' | 'quarantined'; text: string }[] = [
    // Names match events_YYYY_MM (above): nothing a client wrote.
    ...parts.map(({ name }) => ({
      type: 'events' as const,
      text: `SELECT (to_jsonb(e) - 'project_id')::text AS j FROM ${name} e WHERE project_id = $1 AND platform_user_id = $2::bigint`,
    })),
    {
      type: 'quarantined',
      text: `SELECT (to_jsonb(q) - 'project_id')::text AS j FROM quarantine q
             WHERE project_id = $1 AND (user_id = $2::bigint OR ${USER_IN_QUARANTINE} = $2::text) ORDER BY id`,
    },
  ];
  for (const q of queries) {
    let chunk = '';
    for await (const batch of sql.unsafe<{ j: string }[]>(q.text, [projectId, userId]).cursor(CURSOR_ROWS)) {
      if (performance.now() - started > maxMs) throw new ExportTooLong(`the export took over ${maxMs} ms`);
      counts[q.type] += batch.length;
      for (const r of batch) {
        chunk += line(TYPE[q.type] ?? q.type, r.j);
        if (chunk.length >= CHUNK_BYTES) {
          yield chunk;
          chunk = '';
        }
      }
    }
    if (chunk !== '') yield chunk;
  }
  yield line('end', JSON.stringify(counts));
}
