// A large table for b-large-50m: rows like the service's, of the project the benchmark then sends to
// (so its inserts land among them in the unique index), generated inside PostgreSQL with random
// (v4) event ids, the costliest kind for the index, over the previous and the current month's
// partitions. Each partition's unique index is dropped during the load and built after it, as a
// bulk load is done, with its leaf pages 70% full: what random inserts leave in an index grown one
// row at a time (a fresh build packs them to 90%, and the benchmark would then measure the page
// splits of a table that was just bulk-loaded rather than one that grew). The events are visits of 10 million
// users, with campaigns, payments and refunds among them, for the reports of reports-50m; every other visit is a
// mini-app session (its plain events come from the webapp endpoint with a session_id, the first an app_open, the last
// an app_close), for its sessions report.
import { FOLD_VERSION } from '../../src/reports/fold-sql.js';
import type { Database } from './env.js';

/** Distinct users of the preloaded events: each visit of PER_VISIT events is a user's (reports-50m). */
export const USERS = 10_000_000;
/** Events of a visit, each the next row: a visit's user is 100000000 + (visit × 7919) mod USERS. */
export const PER_VISIT = 5;

export async function preload(db: Database, ids: { projectId: string; botId: string }, total: number): Promise<void> {
  const { projectId, botId } = ids;
  const months = await db.sql<{ part: string; start: Date; span: number }[]>`
    SELECT format('events_%s', to_char(m, 'YYYY_MM')) AS part, m AT TIME ZONE 'UTC' AS start,
           extract(epoch FROM (least(m + interval '1 month', now() AT TIME ZONE 'UTC') - m))::float8 AS span
    FROM (VALUES (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month'), (date_trunc('month', now() AT TIME ZONE 'UTC'))) AS v(m)`;
  const perMonth = Math.floor(total / months.length);
  let offset = 0;
  for (const { part, start, span } of months) {
    await db.sql.unsafe(`DROP INDEX IF EXISTS ${part}_project_event_key`);
    // In slices, so that no single statement holds hours of work.
    for (let done = 0; done < perMonth; done += 5_000_000) {
      const n = Math.min(5_000_000, perMonth - done);
      // A visit: its first event names a campaign for one user in five (k = 1), its last is a payment for one in
      // fifty (k = 2), refunded for one in a thousand by the event before it (k = 3); the rest are screen views.
      await db.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at, platform_user_id, origin, channel,
                            text, props_string, props_long, props_float, props_bool, tg, billed, summarized)
        SELECT ${projectId}, ${botId}, gen_random_uuid(),
               CASE WHEN k = 0 AND mini AND i % ${PER_VISIT} = 0 THEN 'app_open'
                    WHEN k = 0 AND mini AND i % ${PER_VISIT} = ${PER_VISIT - 1} THEN 'app_close'
                    ELSE (ARRAY['screen_view', 'command', 'successful_payment', 'refunded_payment'])[k + 1] END,
               (ARRAY['interaction', 'message', 'payment', 'payment'])[k + 1],
               t, t, 100000000 + (ud * 7919) % ${USERS}, CASE WHEN k = 0 THEN 'custom' ELSE 'platform' END,
               CASE WHEN k = 0 AND mini THEN 'webapp' ELSE 'bot_api' END,
               NULL,
               CASE WHEN k = 0 AND mini
                    THEN jsonb_build_object('screen', 'home', 'variant', 'a', 'session_id', md5(ud::text)::uuid,
                                            'platform', (ARRAY['ios', 'android', 'tdesktop', 'weba'])[1 + ud % 4])
                    ELSE '{"screen": "home", "variant": "a"}' END,
               jsonb_build_object('items', i % 7, 'price_cents', 1299 + i % 1000), NULL, '{"first_time": true}',
               CASE k
                 WHEN 0 THEN NULL
                 WHEN 1 THEN jsonb_build_object('command', 'start', 'start_param', 'camp_' || (ud * 7919) % 47)
                 ELSE jsonb_build_object('currency', (ARRAY['XTR', 'USD'])[1 + ud % 2], 'total_amount', 100 + ud % 900,
                                         'telegram_payment_charge_id', 'ch' || (i + k - 2))
               END,
               true, true
        FROM (
          SELECT i, ud, t, ud % 2 = 0 AS mini,
                 CASE WHEN i % ${PER_VISIT} = 0 AND (ud * 7919) % 5 = 0 THEN 1
                      WHEN i % ${PER_VISIT} = ${PER_VISIT - 1} AND ud % 50 = 0 THEN 2
                      WHEN i % ${PER_VISIT} = ${PER_VISIT - 2} AND ud % 1000 = 0 THEN 3
                      ELSE 0 END AS k
          FROM (
            SELECT g + ${done + offset}::bigint AS i, (g + ${done + offset}::bigint) / ${PER_VISIT} AS ud,
                   ${start}::timestamptz + ((g + ${done}::int) * ${span / perMonth}::float8) * interval '1 second' AS t
            FROM generate_series(1, ${n}::int) AS g
          ) AS r
        ) AS v`;
    }
    await db.sql.unsafe(
      `CREATE UNIQUE INDEX ${part}_project_event_key ON ${part} (project_id, event_id) WITH (fillfactor = 70)`,
    );
    offset += perMonth;
  }
  // History from before report summaries (as after an upgrade): the aggregator reads it from the table
  // (summarized = true keeps it out of the partial index of rows no summary holds).
  await db.sql.begin(async (tx) => {
    await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true)`;
    await tx`UPDATE report_watermark SET summaries_since = now()`;
  });
  await db.sql`VACUUM ANALYZE events`;
  // The load's WAL is flushed before measuring, not by a checkpoint in the middle of it.
  await db.sql`CHECKPOINT`;
}
