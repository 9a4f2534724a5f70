// Keeps the report aggregates (migration 9) up to date: every REPORTS_EVERY_MS one instance (an advisory lock) folds
// the events received since its watermark into them, in the transaction that moves the watermark, so each stored
// event counts exactly once however often a window is retried. It stays REPORTS_LAG_MS behind the clock: a request's
// received_at is set before its commit, and a window must not close on rows still being committed. Windows adapt
// to a size a transaction handles in well under a second, so catching up on history never holds locks for long.
import type { Sql } from '../db/connect.js';
import type { Logger } from '../log.js';

const LOCK_KEY = 7_240_311_909;
const TARGET_ROWS = 100_000;
const MIN_STEP_MS = 1000;
const MAX_STEP_MS = 31 * 86_400_000;

export interface AggregatorOptions {
  everyMs: number;
  lagMs: number;
}

export interface WindowResult {
  from: string;
  to: string;
  events: number;
}

/** Folds events with received_at in (from, to] into the aggregates. One statement: every part or none. */
const FOLD = `
WITH base AS MATERIALIZED (
  -- One pass over the window, grouped at once by what the reports count: a busy window of a million events
  -- becomes one row per (day, type, user). Events a report needs one by one (payments, refunds, campaigns)
  -- keep a row of their own, named by their id.
  SELECT project_id, (event_date AT TIME ZONE 'UTC')::date AS day, event_type, platform_user_id AS user_id,
         CASE WHEN tg ? 'start_param' OR event_name IN ('successful_payment', 'refunded_payment') THEN event_id END
           AS special_id,
         count(*) AS n
  FROM events WHERE received_at > $1 AND received_at <= $2
  GROUP BY 1, 2, 3, 4, 5
), ev AS (
  -- The few events read one by one, through the unique index.
  SELECT b.project_id, b.day, b.user_id, e.tg->>'start_param' AS start_param, e.received_at, e.event_id,
         CASE WHEN e.event_name IN ('successful_payment', 'refunded_payment') AND e.channel = 'bot_api'
                   AND jsonb_typeof(e.tg->'currency') = 'string' AND jsonb_typeof(e.tg->'total_amount') = 'number'
              THEN e.event_name END AS payment,
         e.tg AS pay_tg
  FROM base b CROSS JOIN LATERAL (
    SELECT * FROM events e
    WHERE e.project_id = b.project_id AND e.event_id = b.special_id AND e.received_at > $1 AND e.received_at <= $2
    LIMIT 1
  ) e
  WHERE b.special_id IS NOT NULL), types AS (
  -- One aggregator at a time (an advisory lock) and no other writer: no row order is needed against deadlocks.
  INSERT INTO report_day_types AS t (project_id, day, event_type, events)
  SELECT project_id, day, event_type, sum(n) FROM base GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, event_type) DO UPDATE SET events = t.events + excluded.events
  RETURNING 1
), active AS (
  INSERT INTO report_active (project_id, day, user_id)
  SELECT project_id, day, user_id FROM base WHERE user_id IS NOT NULL GROUP BY 1, 2, 3
  ON CONFLICT DO NOTHING
  RETURNING project_id, day
), firsts AS (
  SELECT project_id, user_id, min(day) AS day FROM base WHERE user_id IS NOT NULL GROUP BY 1, 2
), campaigns AS (
  -- Rare: only events that name a campaign are sorted.
  SELECT project_id, user_id,
         (array_agg(start_param ORDER BY received_at, event_id))[1] AS first_campaign,
         (array_agg(start_param ORDER BY received_at DESC, event_id DESC))[1] AS last_campaign
  FROM ev WHERE start_param IS NOT NULL AND user_id IS NOT NULL GROUP BY 1, 2
), cand AS (
  SELECT f.project_id, f.user_id, f.day, c.first_campaign, c.last_campaign
  FROM firsts f LEFT JOIN campaigns c USING (project_id, user_id)
), old AS (
  SELECT r.project_id, r.user_id, r.first_day FROM report_users r JOIN cand c USING (project_id, user_id)
), users AS (
  INSERT INTO report_users AS r (project_id, user_id, first_day, first_campaign, last_campaign)
  SELECT project_id, user_id, day, first_campaign, last_campaign FROM cand
  ON CONFLICT (project_id, user_id) DO UPDATE SET
    first_day = least(r.first_day, excluded.first_day),
    first_campaign = coalesce(r.first_campaign, excluded.first_campaign),
    last_campaign = coalesce(excluded.last_campaign, r.last_campaign)
  -- A returning user seen on a later day changes nothing: no new row version.
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
), pay AS (
  -- Payments as the revenue report always counted them (bot_api, once per charge id), and refunds alike.
  INSERT INTO report_payments (project_id, kind, charge_key, currency, amount, day, user_id)
  SELECT DISTINCT ON (project_id, kind, charge_key) project_id, kind, charge_key, currency, amount, day, user_id
  FROM (
    SELECT project_id, CASE payment WHEN 'successful_payment' THEN 'payment' ELSE 'refund' END AS kind,
           coalesce(pay_tg->>'telegram_payment_charge_id', pay_tg->>'provider_payment_charge_id', event_id::text) AS charge_key,
           pay_tg->>'currency' AS currency, (pay_tg->>'total_amount')::numeric AS amount, day, user_id, received_at
    FROM ev WHERE payment IS NOT NULL
  ) p
  ORDER BY project_id, kind, charge_key, received_at
  ON CONFLICT DO NOTHING
  RETURNING project_id, kind, currency, amount, day
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
SELECT coalesce(sum(n), 0)::int AS events FROM base`;

/**
 * BRIN summarises a block range only when asked (or by autovacuum, a minute or more later); an unsummarised range
 * matches every query, so without this a window would read every block written since the last vacuum. Asked for
 * the partitions the window touches, it reads only the blocks written since the last fold.
 */
const SUMMARIZE = `
SELECT count(brin_summarize_new_values(x.indexrelid))::int AS n
FROM pg_inherits i
JOIN pg_class p ON p.oid = i.inhrelid
JOIN pg_index x ON x.indrelid = p.oid
JOIN pg_class ic ON ic.oid = x.indexrelid
JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'brin'
WHERE i.inhparent = 'events'::regclass
  AND p.relname >= 'events_' || to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY_MM')
  AND p.relname <= 'events_' || to_char($2::timestamptz AT TIME ZONE 'UTC', 'YYYY_MM')`;

export class ReportAggregator {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stepMs = 60_000;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** The watermark this instance last saw move (for /metrics and logs). */
  lastWatermark: Date | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly opts: AggregatorOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.catchUp()
        .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'report aggregation failed'))
        .finally(() => {
          this.running = null;
          this.schedule(this.opts.everyMs);
        });
    }, ms);
    this.timer.unref();
  }

  /** Windows until the watermark is within a step of now − lag (or another instance holds the lock). */
  async catchUp(): Promise<void> {
    for (;;) {
      const w = await this.fold();
      if (w === null || this.stopped) return;
      if (Date.parse(w.to) >= Date.now() - this.opts.lagMs - MIN_STEP_MS) return;
    }
  }

  /** One window; null when another instance holds the lock or there is nothing new to close. */
  async fold(now = Date.now()): Promise<WindowResult | null> {
    const until = new Date(now - this.opts.lagMs);
    const result = (await this.sql.begin(async (tx) => {
      const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok`;
      if (!lock?.ok) return null;
      const [wm] = await tx<{ at: string }[]>`SELECT received_before::text AS at FROM report_watermark FOR UPDATE`;
      let from = wm!.at;
      if (from === '-infinity') {
        // The first run: from the oldest partition's start (a bound, not a scan of the rows).
        const [oldest] = await tx<{ start: Date | null }[]>`
          SELECT (min(to_date(substr(c.relname, 8), 'YYYY_MM'))::timestamp AT TIME ZONE 'UTC') AS start
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$'`;
        from = new Date((oldest?.start ?? until).getTime() - 1).toISOString();
      }
      const fromMs = Date.parse(from);
      if (!(fromMs < until.getTime())) return null;
      const to = new Date(Math.min(until.getTime(), fromMs + this.stepMs)).toISOString();
      // A window's grouping stays in memory: spilled to disk it cost the fold twice as much (measured).
      await tx`SET LOCAL work_mem = '64MB'`;
      // The planner expects many groups and sorts a million rows on disk; hashed, they fit in a few MB (measured:
      // 3.6 s against 1.4 s for 900,000 events).
      await tx`SET LOCAL enable_sort = off`;
      await tx.unsafe(SUMMARIZE, [from, to]);
      const [row] = await tx.unsafe<{ events: number }[]>(FOLD, [from, to]);
      await tx`UPDATE report_watermark SET received_before = ${to}`;
      return { from, to, events: row!.events };
    })) as WindowResult | null;
    if (result === null) return null;
    // Windows of about TARGET_ROWS: halved after a heavy one, doubled after a light one.
    if (result.events > TARGET_ROWS * 2) this.stepMs = Math.max(MIN_STEP_MS, this.stepMs / 2);
    else if (result.events < TARGET_ROWS / 2) this.stepMs = Math.min(MAX_STEP_MS, this.stepMs * 2);
    this.lastWatermark = new Date(result.to);
    return result;
  }
}
