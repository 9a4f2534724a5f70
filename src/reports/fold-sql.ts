// The statements of a fold: a window's stored events grouped as the reports count them (from the table, or from the
// commits' report summaries with the rows no summary holds), folded into the aggregates in one statement; and the
// BRIN summaries a window of the table asks for first.
import { CAMPAIGN_MAX_CHARS, PAYMENT_NAMES } from '../pipeline/summary.js';
import { addToCells, RETENTION_SPAN, WEEK } from './retention-sql.js';
import { HASH_SQL } from './sketch.js';

/** Set in the fold's transaction; migration 10's trigger refuses a watermark moved without it (an older build). */
export const FOLD_VERSION = '18';

/** The names of PAYMENT_NAMES as an SQL list. */
const PAYMENT_SQL = [...PAYMENT_NAMES].map((n) => `'${n}'`).join(', ');

/**
 * Stored events received in (`from`, `to`] grouped as the reports count them, from the table; `filter` narrows the
 * rows read. A payment's row keeps its time, by which the fold reads it again.
 */
const eventsBase = (filter: string, from: string, to: string) => `
  SELECT project_id, (event_date AT TIME ZONE 'UTC')::date AS day, event_type, platform_user_id AS user_id,
         nullif(left(tg->>'start_param', ${CAMPAIGN_MAX_CHARS}), '') AS start_param,
         CASE WHEN event_name IN (${PAYMENT_SQL}) THEN event_id END AS special_id,
         count(*) AS n,
         min(received_at) FILTER (WHERE tg ? 'start_param' OR event_name IN (${PAYMENT_SQL})) AS first_at,
         max(received_at) FILTER (WHERE tg ? 'start_param' OR event_name IN (${PAYMENT_SQL})) AS last_at
  FROM events WHERE received_at > ${from}::text::timestamptz AND received_at <= ${to}::text::timestamptz${filter}
  GROUP BY 1, 2, 3, 4, 5, 6`;

/**
 * The same from the commits' report summaries (src/reports/summaries.ts, grouped already), with the rows no summary
 * holds received in ($1, $12] (summarized = false: found by their partial index).
 */
const SUMMARIES_BASE = `
  SELECT project_id, day, event_type, user_id, start_param, special_id, sum(n) AS n, min(first_at) AS first_at,
         max(last_at) AS last_at
  FROM (
    SELECT project_id, '1970-01-01'::date + day AS day, event_type, user_id, start_param, special_id, n, first_at, last_at
    FROM unnest($3::uuid[], $4::int[], $5::text[], $6::bigint[], $7::text[], $8::uuid[], $9::bigint[],
                $10::timestamptz[], $11::timestamptz[])
      AS s(project_id, day, event_type, user_id, start_param, special_id, n, first_at, last_at)
    UNION ALL
    ${eventsBase(' AND summarized IS NOT TRUE', '$1', '$12')}
  ) x
  GROUP BY 1, 2, 3, 4, 5, 6`;

/**
 * Folds grouped events into the aggregates. One statement: every part or none. `base`: where the events come from,
 * grouped (a window of time of the table before summaries_since; the commits' summaries after, with the rows no
 * summary holds). Payments and refunds are read again by id among the rows received in ($1, $2], within a second of
 * the time their group keeps.
 */
const fold = (base: string) => `
WITH base AS MATERIALIZED (
  -- One row per (day, type, user) of the window, and per campaign the user named in it (a mini-app session opened
  -- through a link names one on every event: a group, not a row each). Payments and refunds keep a row of their
  -- own, named by their id.
  ${base}
), ev AS (
  -- The few payments and refunds, read one by one through the unique index.
  SELECT b.project_id, b.day, b.user_id, e.received_at, e.event_id,
         CASE WHEN e.event_name IN (${PAYMENT_SQL}) AND e.channel = 'bot_api'
                   AND e.tg->>'currency' ~ '^[A-Z]{3}$' AND jsonb_typeof(e.tg->'total_amount') = 'number'
              THEN e.event_name END AS payment,
         e.tg AS pay_tg
  FROM base b CROSS JOIN LATERAL (
    SELECT * FROM events e
    WHERE e.project_id = b.project_id AND e.event_id = b.special_id
      AND e.received_at > $1::text::timestamptz AND e.received_at <= $2::text::timestamptz
      AND e.received_at >= coalesce(b.first_at - interval '1 second', '-infinity')
      AND e.received_at <= coalesce(b.last_at + interval '1 second', 'infinity')
    LIMIT 1
  ) e
  WHERE b.special_id IS NOT NULL
), types AS (
  -- One aggregator at a time (an advisory lock) and no other writer: no row order is needed against deadlocks.
  INSERT INTO report_day_types AS t (project_id, day, event_type, events)
  SELECT project_id, day, event_type, sum(n) FROM base GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, event_type) DO UPDATE SET events = t.events + excluded.events
  RETURNING 1
), firsts AS (
  SELECT project_id, user_id, min(day) AS day FROM base WHERE user_id IS NOT NULL GROUP BY 1, 2
), campaigns AS (
  -- The campaign seen first and the one seen last in the window, per user (ties: the smaller name).
  SELECT project_id, user_id,
         (array_agg(start_param ORDER BY first_at, start_param))[1] AS first_campaign,
         (array_agg(start_param ORDER BY last_at DESC, start_param))[1] AS last_campaign
  FROM base WHERE start_param IS NOT NULL AND user_id IS NOT NULL GROUP BY 1, 2
), cand AS (
  SELECT f.project_id, f.user_id, f.day, c.first_campaign, c.last_campaign
  FROM firsts f LEFT JOIN campaigns c USING (project_id, user_id)
), old AS (
  -- One primary-key probe per user of the window: a join would read every user of the deployment each time.
  SELECT c.project_id, c.user_id, r.first_day, r.first_campaign
  FROM cand c CROSS JOIN LATERAL (
    SELECT first_day, first_campaign FROM report_users r WHERE r.project_id = c.project_id AND r.user_id = c.user_id
  ) r
), ucamp AS (
  -- The campaign a user's figures of this window are filed under: their first, as known by its end ('' for none).
  SELECT c.project_id, c.user_id, c.day, coalesce(o.first_campaign, c.first_campaign, '') AS campaign,
         o.user_id IS NOT NULL AS known, o.first_day AS old_day, coalesce(o.first_campaign, '') AS old_campaign
  FROM cand c LEFT JOIN old o USING (project_id, user_id)
), seen AS (
  -- Each user's days in the window as report_active knows them (one primary-key probe each), with the campaign the
  -- user is filed under by the window's end.
  SELECT d.project_id, d.day, d.user_id, u.campaign, a.campaign AS filed, a.user_id IS NOT NULL AS known
  FROM (SELECT project_id, day, user_id FROM base WHERE user_id IS NOT NULL GROUP BY 1, 2, 3) d
  JOIN ucamp u USING (project_id, user_id)
  LEFT JOIN LATERAL (
    SELECT a.campaign, a.user_id FROM report_active a
    WHERE a.project_id = d.project_id AND a.day = d.day AND a.user_id = d.user_id
  ) a ON true
), active AS (
  -- New active user-days. A day a user is active on again changes nothing here, nor in the sketches below.
  INSERT INTO report_active (project_id, day, user_id, campaign)
  SELECT project_id, day, user_id, campaign FROM seen WHERE NOT known
  ON CONFLICT DO NOTHING
  RETURNING project_id, day, user_id, campaign
), refiled AS (
  -- A day a user was active on under another campaign (none, then their first became known): in this one's sketch too.
  UPDATE report_active a SET campaign = s.campaign
  FROM seen s
  WHERE s.known AND s.filed IS DISTINCT FROM s.campaign
    AND a.project_id = s.project_id AND a.day = s.day AND a.user_id = s.user_id
  RETURNING a.project_id, a.day, a.user_id, a.campaign
), campaign_moves AS (
  -- A new user counts under their campaign on their first day; one whose first day moved back, or whose first
  -- campaign became known, moves from where they counted.
  SELECT project_id, least(day, coalesce(old_day, day)) AS day, campaign, 1 AS n FROM ucamp
  WHERE NOT known OR day < old_day OR campaign <> old_campaign
  UNION ALL
  SELECT project_id, old_day, old_campaign, -1 FROM ucamp WHERE known AND (day < old_day OR campaign <> old_campaign)
), campaign_days AS (
  INSERT INTO report_campaign_days AS d (project_id, day, campaign, new_users)
  SELECT project_id, day, campaign, sum(n) FROM campaign_moves GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, campaign) DO UPDATE SET new_users = d.new_users + excluded.new_users
  RETURNING 1
), users AS (
  INSERT INTO report_users AS r (project_id, user_id, first_day, first_campaign, last_campaign)
  SELECT c.project_id, c.user_id, c.day, c.first_campaign, c.last_campaign
  FROM cand c LEFT JOIN old o USING (project_id, user_id)
  -- A returning user seen on a later day without a campaign changes nothing: not even a probe.
  WHERE o.user_id IS NULL OR c.day < o.first_day OR c.first_campaign IS NOT NULL
  ON CONFLICT (project_id, user_id) DO UPDATE SET
    first_day = least(r.first_day, excluded.first_day),
    first_campaign = coalesce(r.first_campaign, excluded.first_campaign),
    last_campaign = coalesce(excluded.last_campaign, r.last_campaign)
  WHERE excluded.first_day < r.first_day OR excluded.first_campaign IS NOT NULL
  RETURNING 1
), moves AS (
  -- A new user counts on their first day; one whose history reached back further moves to the earlier day.
  SELECT c.project_id, c.day, 1 AS n FROM cand c LEFT JOIN old o USING (project_id, user_id)
  WHERE o.user_id IS NULL OR c.day < o.first_day
  UNION ALL
  SELECT o.project_id, o.first_day, -1 FROM cand c JOIN old o USING (project_id, user_id) WHERE c.day < o.first_day
), days AS (
  INSERT INTO report_days AS d (project_id, day, active_users, new_users)
  SELECT project_id, day, sum(a), sum(n) FROM (
    SELECT project_id, day, 1 AS a, 0 AS n FROM active
    UNION ALL SELECT project_id, day, 0, n FROM moves
  ) x GROUP BY 1, 2
  ON CONFLICT (project_id, day) DO UPDATE SET
    active_users = d.active_users + excluded.active_users, new_users = d.new_users + excluded.new_users
  RETURNING 1
), cohorts AS (
  -- Each user of the window with their cohort (first day, first campaign) after this fold, and whether it moved.
  SELECT project_id, user_id, campaign, CASE WHEN known THEN least(day, old_day) ELSE day END AS cohort,
         old_day, old_campaign, known AND (day < old_day OR campaign <> old_campaign) AS moved
  FROM ucamp
), moved_days AS (
  -- A moved user's days before this fold that can be in a cell of their old cohort (report_active by user and day):
  -- their cells move with them.
  SELECT c.project_id, c.user_id, c.campaign, c.cohort, c.old_campaign, c.old_day, a.day
  FROM cohorts c CROSS JOIN LATERAL (
    SELECT day FROM report_active a
    WHERE a.project_id = c.project_id AND a.user_id = c.user_id AND a.day <= c.old_day + ${RETENTION_SPAN}
  ) a
  WHERE c.moved
), new_days AS (
  SELECT a.project_id, a.user_id, a.day, c.campaign, c.cohort
  FROM active a JOIN cohorts c USING (project_id, user_id)
), new_weeks AS (
  -- A week counts a user once: only a week new to them adds to its cell.
  INSERT INTO report_active_weeks (project_id, user_id, week)
  SELECT DISTINCT project_id, user_id, ${WEEK('day')} FROM new_days
  ON CONFLICT DO NOTHING
  RETURNING project_id, week, user_id
)${addToCells(
  'day',
  `
  SELECT project_id, cohort, day, campaign, 1 AS n FROM new_days
  UNION ALL SELECT project_id, cohort, day, campaign, 1 FROM moved_days
  UNION ALL SELECT project_id, old_day, day, old_campaign, -1 FROM moved_days`,
)}, moved_weeks AS (
  SELECT DISTINCT project_id, user_id, cohort, campaign, old_day, old_campaign, ${WEEK('day')} AS week FROM moved_days
)${addToCells(
  'week',
  `
  SELECT w.project_id, c.cohort, w.week, c.campaign, 1 AS n
  FROM new_weeks w JOIN cohorts c USING (project_id, user_id)
  UNION ALL SELECT project_id, cohort, week, campaign, 1 FROM moved_weeks
  UNION ALL SELECT project_id, old_day, week, old_campaign, -1 FROM moved_weeks`,
)}, pay AS (
  -- Payments as the revenue report always counted them (bot_api, once per charge id), and refunds alike.
  INSERT INTO report_payments (project_id, kind, charge_key, currency, amount, day, user_id)
  SELECT DISTINCT ON (project_id, kind, charge_key) project_id, kind, charge_key, currency, amount, day, user_id
  FROM (
    -- A charge id is a btree key: one longer than 256 bytes is kept as its SHA-256 (as billing keys are), so no
    -- string a client sends can make the row too large for the index and stop the reports of every project.
    SELECT project_id, kind, currency, amount, day, user_id, received_at,
           CASE WHEN octet_length(raw_key) > 256 THEN 'sha256:' || encode(sha256(convert_to(raw_key, 'UTF8')), 'hex')
                ELSE raw_key END AS charge_key
    FROM (
      SELECT project_id, CASE payment WHEN 'successful_payment' THEN 'payment' ELSE 'refund' END AS kind,
             coalesce(pay_tg->>'telegram_payment_charge_id', pay_tg->>'provider_payment_charge_id', event_id::text)
               AS raw_key,
             pay_tg->>'currency' AS currency, (pay_tg->>'total_amount')::numeric AS amount, day, user_id, received_at
      FROM ev WHERE payment IS NOT NULL
    ) r
  ) p
  ORDER BY project_id, kind, charge_key, received_at
  ON CONFLICT DO NOTHING
  RETURNING project_id, kind, currency, amount, day, user_id
), campaign_revenue AS (
  INSERT INTO report_campaign_revenue AS r (project_id, day, campaign, currency, net_amount)
  SELECT p.project_id, p.day, coalesce(u.campaign, ''), p.currency,
         sum(CASE p.kind WHEN 'payment' THEN p.amount ELSE -p.amount END)
  FROM pay p LEFT JOIN ucamp u ON u.project_id = p.project_id AND u.user_id = p.user_id
  GROUP BY 1, 2, 3, 4
  ON CONFLICT (project_id, day, campaign, currency) DO UPDATE SET net_amount = r.net_amount + excluded.net_amount
  RETURNING 1
), sketch_in AS (
  -- Who to add to each campaign's and day's sketches of active users and payers (in fold(), after this): a user-day
  -- new to report_active or filed anew; the others are in their sketch already.
  SELECT 'active' AS kind, project_id, campaign, day, user_id FROM active
  UNION ALL
  SELECT 'active', project_id, campaign, day, user_id FROM refiled
  UNION ALL
  SELECT 'payers', p.project_id, u.campaign, p.day, p.user_id
  FROM pay p JOIN ucamp u ON u.project_id = p.project_id AND u.user_id = p.user_id WHERE p.kind = 'payment'
), revenue AS (
  INSERT INTO report_revenue_days AS r (project_id, day, currency, payments, amount, refunds, refunded_amount)
  SELECT project_id, day, currency,
         count(*) FILTER (WHERE kind = 'payment'), coalesce(sum(amount) FILTER (WHERE kind = 'payment'), 0),
         count(*) FILTER (WHERE kind = 'refund'), coalesce(sum(amount) FILTER (WHERE kind = 'refund'), 0)
  FROM pay GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, currency) DO UPDATE SET
    payments = r.payments + excluded.payments, amount = r.amount + excluded.amount,
    refunds = r.refunds + excluded.refunds, refunded_amount = r.refunded_amount + excluded.refunded_amount
  RETURNING 1
)
SELECT (SELECT coalesce(sum(n), 0)::int FROM base) AS events,
       (SELECT coalesce(json_agg(s), '[]') FROM (
          SELECT kind, project_id, campaign, day::text, array_agg(DISTINCT ${HASH_SQL}) AS hashes
          FROM sketch_in GROUP BY 1, 2, 3, 4
        ) s) AS sketches`;
export const FOLD_EVENTS = fold(eventsBase('', '$1', '$2'));
export const FOLD_SUMMARIES = fold(SUMMARIES_BASE);

/**
 * BRIN summarises a block range only when asked (or by autovacuum, a minute or more later); an unsummarised range
 * matches every query, so without this a window would read every block written since the last vacuum. Asked for
 * the partitions the window touches, it reads only the blocks written since the last fold.
 */
export const SUMMARIZE = `
SELECT count(brin_summarize_new_values(x.indexrelid))::int AS n
FROM pg_inherits i
JOIN pg_class p ON p.oid = i.inhrelid
JOIN pg_index x ON x.indrelid = p.oid
JOIN pg_class ic ON ic.oid = x.indexrelid
JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'brin'
WHERE i.inhparent = 'events'::regclass
  AND p.relname >= 'events_' || to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY_MM')
  AND p.relname <= 'events_' || to_char($2::timestamptz AT TIME ZONE 'UTC', 'YYYY_MM')`;
