// Versioned schema migrations, applied at start under an advisory lock so that several instances
// starting together apply each exactly once. Append new versions; never edit an applied one.
import type { Sql } from './connect.js';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE projects (
  project_id      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name            text NOT NULL,
  -- Events billable per calendar month (UTC); NULL is unlimited.
  event_allowance bigint CHECK (event_allowance IS NULL OR event_allowance >= 0),
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE bots (
  bot_id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  messenger_bot_id bigint CHECK (messenger_bot_id > 0),
  project_id       uuid REFERENCES projects ON DELETE SET NULL,
  mini_app_ingest  boolean NOT NULL DEFAULT true,
  api_ingest       boolean NOT NULL DEFAULT true,
  -- The latest bot snapshot reported on the bot_api endpoint.
  name             text,
  description      text,
  stars_amount     numeric,
  snapshot_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bots_project_idx ON bots (project_id);
-- initData is signed for a messenger bot: two service bots sharing one would accept each other's sessions.
CREATE UNIQUE INDEX bots_messenger_bot_id_key ON bots (messenger_bot_id);

-- Only a SHA-256 of each token is stored; the value is shown once, at creation.
CREATE TABLE api_tokens (
  token_id    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  bot_id      uuid NOT NULL REFERENCES bots ON DELETE CASCADE,
  token_hash  bytea NOT NULL UNIQUE,
  hint        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_tokens_bot_idx ON api_tokens (bot_id);

CREATE TABLE users (
  project_id        uuid NOT NULL,
  messenger_user_id bigint NOT NULL,
  username          text,
  first_name        text,
  last_name         text,
  language_code     text,
  is_premium        boolean,
  first_seen        timestamptz NOT NULL,
  last_seen         timestamptz NOT NULL,
  PRIMARY KEY (project_id, messenger_user_id)
);

-- No foreign keys here: every check would be paid per row on the COPY path.
CREATE TABLE events (
  project_id       uuid NOT NULL,
  bot_id           uuid NOT NULL,
  event_id         uuid NOT NULL,
  event_name       text NOT NULL,
  event_type       text NOT NULL,
  event_date       timestamptz NOT NULL,
  received_at      timestamptz NOT NULL,
  platform_user_id bigint,
  origin           text NOT NULL,
  channel          text NOT NULL,
  text             text,
  props_string     jsonb,
  props_long       jsonb,
  props_float      jsonb,
  props_bool       jsonb,
  tg               jsonb,
  billed           boolean NOT NULL,
  CONSTRAINT events_project_event_key UNIQUE (project_id, event_id)
);
-- The revenue report reads only payments; a partial index keeps it cheap to maintain.
CREATE INDEX events_payments_idx ON events (project_id) WHERE event_name = 'successful_payment';

-- Who reported a messenger action first: that connection's reports are billed, others' are not.
CREATE TABLE billing_actions (
  project_id    uuid NOT NULL,
  action_key    text NOT NULL,
  connection_id text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, action_key)
);

-- Billing ledger: events charged and stored per project and calendar month (UTC). Each writer
-- connection adds to its own shard, so concurrent commits of one busy project never queue on one
-- row lock; billing_usage sums the shards.
CREATE TABLE billing_ledger (
  project_id    uuid NOT NULL,
  month         date NOT NULL,
  shard         smallint NOT NULL DEFAULT 0,
  events_billed bigint NOT NULL DEFAULT 0,
  events_stored bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, month, shard)
);
CREATE VIEW billing_usage AS
  SELECT project_id, month, sum(events_billed)::bigint AS events_billed, sum(events_stored)::bigint AS events_stored
  FROM billing_ledger GROUP BY project_id, month;
`,
  },
  {
    version: 2,
    name: 'one free report of a messenger action per connection',
    sql: `
-- A connection that does not own a messenger action reports it free once; its further reports are billed.
CREATE TABLE billing_free_reports (
  project_id    uuid NOT NULL,
  action_key    text NOT NULL,
  connection_id text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, action_key, connection_id)
);
`,
  },
  {
    version: 3,
    name: 'tracking plans and the quarantine',
    sql: `
-- One tracking plan per project; version counts every change (a deleted plan keeps its number, plan NULL).
CREATE TABLE tracking_plans (
  project_id uuid PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
  version    integer NOT NULL,
  plan       jsonb,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Events rejected after authentication, with their reasons, until replayed, deleted or expired.
CREATE TABLE quarantine (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id    uuid NOT NULL,
  bot_id        uuid NOT NULL,
  channel       text NOT NULL,
  -- The billing connection the event came over, so that a replay is billed as it would have been.
  connection_id text NOT NULL,
  -- The verified initData user (webapp endpoint).
  user_id       bigint,
  received_at   timestamptz NOT NULL,
  -- As sent (cut to 64 characters), null when there was none.
  event_id      text,
  -- The error codes, for filtering and the summary.
  codes         text[] NOT NULL,
  diagnostics   jsonb NOT NULL,
  -- The event as sent, JSON text; only its first 64 KiB when truncated.
  event         text NOT NULL,
  truncated     boolean NOT NULL
);
CREATE INDEX quarantine_project_idx ON quarantine (project_id, id DESC);
CREATE INDEX quarantine_received_idx ON quarantine (received_at);
`,
  },
  {
    version: 4,
    name: 'events partitioned by month of received_at',
    sql: `
-- A month's partition of events, created when missing, with its own unique index: a unique index can
-- only hold within a partition, and (project_id, event_id) is what deduplication relies on.
CREATE FUNCTION tg_events_partition(month date) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
  part text := format('events_%s', to_char(month, 'YYYY_MM'));
BEGIN
  IF to_regclass(part) IS NULL THEN
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)', part,
                   (month::timestamp AT TIME ZONE 'UTC'), ((month + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (project_id, event_id)', part || '_project_event_key', part);
  END IF;
  RETURN part;
END
$fn$;

-- Raised when an event of this transaction was already stored in another month's partition: the
-- writer then redoes the batch as for any other redelivery.
CREATE FUNCTION tg_stored_before(stored boolean) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  IF stored THEN
    RAISE unique_violation USING MESSAGE = 'an event of this batch was stored in an earlier month', CONSTRAINT = 'events_project_event_key';
  END IF;
END
$fn$;

ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_payments_idx RENAME TO events_unpartitioned_payments_idx;
ALTER TABLE events_unpartitioned RENAME CONSTRAINT events_project_event_key TO events_unpartitioned_key;
CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (received_at);
-- The revenue report reads only payments; a partial index keeps it cheap to maintain.
CREATE INDEX events_payments_idx ON events (project_id) WHERE event_name = 'successful_payment';
SELECT tg_events_partition(m::date) FROM (
  SELECT DISTINCT date_trunc('month', received_at AT TIME ZONE 'UTC') AS m FROM events_unpartitioned
  UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + k * interval '1 month' FROM generate_series(-1, 2) AS k
) months;
INSERT INTO events SELECT * FROM events_unpartitioned;
DROP TABLE events_unpartitioned;
`,
  },
  {
    version: 5,
    name: 'allowance leased to instances',
    sql: `
-- Each instance charges ledger rows of its own, so that what it billed since a lease was granted is known.
ALTER TABLE billing_ledger ADD COLUMN instance_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE billing_ledger DROP CONSTRAINT billing_ledger_pkey;
ALTER TABLE billing_ledger ADD PRIMARY KEY (project_id, month, instance_id, shard);

-- A block of a project's monthly allowance that an instance may admit events against.
CREATE TABLE quota_leases (
  project_id      uuid NOT NULL,
  month           date NOT NULL,
  instance_id     uuid NOT NULL,
  -- Events the instance may bill beyond what it had billed when the lease was granted.
  events          bigint NOT NULL,
  billed_at_grant bigint NOT NULL,
  -- Counted by the other instances until then.
  hold_until      timestamptz NOT NULL,
  PRIMARY KEY (project_id, month, instance_id)
);
`,
  },
  {
    version: 6,
    name: 'API tokens tagged under a deployment secret',
    sql: `
-- Secrets every instance of the deployment shares. api_token_tag: the key of the tag that issued
-- API tokens carry (two random UUIDs: 244 random bits).
CREATE TABLE deployment_secrets (
  name  text PRIMARY KEY,
  value bytea NOT NULL
);
INSERT INTO deployment_secrets (name, value)
VALUES ('api_token_tag', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
-- Tokens issued before tags carry none; while one of them is live, untagged keys are looked up.
ALTER TABLE api_tokens ADD COLUMN tagged boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 7,
    name: 'quarantine usage per project',
    sql: `
-- Bytes (as stored) and events each project holds in quarantine, kept by triggers on every insert
-- and delete, so that QUARANTINE_MAX_BYTES is checked without measuring the quarantine. Each
-- inserting session adds to a shard of its own (its backend pid), so commits of one busy project
-- never queue on one row lock; deletes subtract from shard -1. "dropped": rejected events not
-- kept because the project was over its budget (shard -1, added by the instances).
CREATE TABLE quarantine_usage (
  project_id      uuid NOT NULL,
  shard           integer NOT NULL,
  bytes           bigint NOT NULL DEFAULT 0,
  events          bigint NOT NULL DEFAULT 0,
  dropped         bigint NOT NULL DEFAULT 0,
  dropped_last_at timestamptz,
  PRIMARY KEY (project_id, shard)
);
CREATE FUNCTION tg_quarantine_added() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO quarantine_usage AS u (project_id, shard, bytes, events)
  SELECT project_id, pg_backend_pid() % 64, sum(pg_column_size(event) + pg_column_size(diagnostics)), count(*)
  FROM added GROUP BY project_id ORDER BY project_id
  ON CONFLICT (project_id, shard) DO UPDATE SET bytes = u.bytes + excluded.bytes, events = u.events + excluded.events;
  RETURN NULL;
END
$fn$;
CREATE FUNCTION tg_quarantine_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO quarantine_usage AS u (project_id, shard, bytes, events)
  SELECT project_id, -1, -sum(pg_column_size(event) + pg_column_size(diagnostics)), -count(*)
  FROM removed GROUP BY project_id ORDER BY project_id
  ON CONFLICT (project_id, shard) DO UPDATE SET bytes = u.bytes + excluded.bytes, events = u.events + excluded.events;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER quarantine_added AFTER INSERT ON quarantine REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION tg_quarantine_added();
CREATE TRIGGER quarantine_removed AFTER DELETE ON quarantine REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION tg_quarantine_removed();
-- What the quarantine held before this version.
INSERT INTO quarantine_usage (project_id, shard, bytes, events)
SELECT project_id, -1, sum(pg_column_size(event) + pg_column_size(diagnostics)), count(*) FROM quarantine GROUP BY project_id;
`,
  },
  {
    version: 8,
    name: 'when a token was last used',
    sql: `
-- Written by each instance at most once a minute per token, from memory, never by a request.
ALTER TABLE api_tokens ADD COLUMN last_used_at timestamptz;
`,
  },
  {
    version: 9,
    name: 'report aggregates',
    sql: `
-- Reports read these, never the events: the aggregator (src/reports/aggregator.ts) folds in each
-- window of received_at once, in the transaction that moves the watermark, one instance at a time.
-- A BRIN index finds a window's rows: a few pages of summary, nothing to maintain per row.
CREATE INDEX events_received_brin ON events USING brin (received_at);
CREATE TABLE report_watermark (
  singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  received_before timestamptz NOT NULL
);
-- Events stored before this version are folded in too, from the oldest.
INSERT INTO report_watermark (received_before) VALUES ('-infinity');
-- Per project and UTC day of eventDate.
CREATE TABLE report_day_types (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  event_type text NOT NULL,
  events     bigint NOT NULL,
  PRIMARY KEY (project_id, day, event_type)
);
CREATE TABLE report_days (
  project_id   uuid NOT NULL,
  day          date NOT NULL,
  active_users bigint NOT NULL DEFAULT 0,
  new_users    bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day)
);
-- Who was active on a day: what makes active_users exact.
CREATE TABLE report_active (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  user_id    bigint NOT NULL,
  PRIMARY KEY (project_id, day, user_id)
);
-- A user's first day (of eventDate) and campaigns: the first start_param seen stays, the latest follows.
CREATE TABLE report_users (
  project_id     uuid NOT NULL,
  user_id        bigint NOT NULL,
  first_day      date NOT NULL,
  first_campaign text,
  last_campaign  text,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX report_users_first_day_idx ON report_users (project_id, first_day);
-- One row per charge and kind (payment, refund): a charge reported twice counts once.
CREATE TABLE report_payments (
  project_id uuid NOT NULL,
  kind       text NOT NULL,
  charge_key text NOT NULL,
  currency   text NOT NULL,
  amount     numeric NOT NULL,
  day        date NOT NULL,
  user_id    bigint,
  PRIMARY KEY (project_id, kind, charge_key)
);
CREATE INDEX report_payments_day_idx ON report_payments (project_id, day);
CREATE TABLE report_revenue_days (
  project_id      uuid NOT NULL,
  day             date NOT NULL,
  currency        text NOT NULL,
  payments        bigint NOT NULL DEFAULT 0,
  amount          numeric NOT NULL DEFAULT 0,
  refunds         bigint NOT NULL DEFAULT 0,
  refunded_amount numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day, currency)
);
`,
  },
  {
    version: 10,
    name: 'campaign aggregates',
    sql: `
-- The campaigns report per day, filed under the user's first campaign as known when the day was folded
-- ('' for none: a key column). Distinct users over a range come from sketches (src/reports/sketch.ts).
CREATE TABLE report_campaign_days (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  campaign   text NOT NULL,
  new_users  bigint NOT NULL DEFAULT 0,
  active     bytea,
  payers     bytea,
  PRIMARY KEY (project_id, day, campaign)
);
CREATE TABLE report_campaign_revenue (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  campaign   text NOT NULL,
  currency   text NOT NULL,
  net_amount numeric NOT NULL,
  PRIMARY KEY (project_id, day, campaign, currency)
);
-- Folded again from the oldest stored event, so that every figure is filed the same way.
TRUNCATE report_day_types, report_days, report_active, report_users, report_payments, report_revenue_days;
UPDATE report_watermark SET received_before = '-infinity';
-- An instance of an older build still running during a rolling upgrade would fold windows without the
-- campaign tables: the watermark moves only in a fold that says it is this version's.
CREATE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '10' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 10)';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER report_watermark_guard BEFORE UPDATE ON report_watermark
  FOR EACH ROW EXECUTE FUNCTION report_watermark_guard();
`,
  },
  {
    version: 11,
    name: 'erasures and suppressions',
    sql: `
-- A person's data on request (src/privacy/): each erasure removes its users' rows from every table
-- that names them, in steps of bounded transactions; step says where it stands, so a restart resumes.
CREATE TABLE erasures (
  erasure_id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id         uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
  status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
  -- The ids while the erasure runs and, once done, while they stay suppressed; else only count and digest.
  user_ids           bigint[],
  user_count         integer NOT NULL,
  digest             text NOT NULL,
  suppress           boolean NOT NULL,
  step               jsonb NOT NULL DEFAULT '{}',
  deleted_events     bigint NOT NULL DEFAULT 0,
  deleted_users      bigint NOT NULL DEFAULT 0,
  deleted_quarantine bigint NOT NULL DEFAULT 0,
  error              text,
  -- Failed attempts at the current step, and when the next may start (backing off).
  attempts           integer NOT NULL DEFAULT 0,
  retry_at           timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  started_at         timestamptz,
  finished_at        timestamptz
);
CREATE INDEX erasures_project_idx ON erasures (project_id, created_at DESC, erasure_id);
CREATE INDEX erasures_open_idx ON erasures (created_at) WHERE status IN ('pending', 'running');
-- Users whose events are dropped before storage. Every instance keeps them in memory, re-read when
-- the project's version moves (one small query per project and AUTH_CACHE_TTL_MS).
CREATE TABLE suppressions (
  project_id uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
  user_id    bigint NOT NULL,
  erasure_id uuid REFERENCES erasures ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, user_id)
);
CREATE TABLE suppression_versions (
  project_id uuid PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
  version    bigint NOT NULL
);
`,
  },
  {
    version: 12,
    name: 'report summaries',
    sql: `
-- Each group commit stores what its rows add to the reports, a few bytes an event (src/pipeline/summary.ts), and
-- the aggregator folds those instead of reading the events again. A row no summary holds says summarized = false
-- (moved in from the writer's staging table, written by hand, or by an older build during a rolling upgrade: the
-- column's default) or NULL (written so by hand) and is found by the partial index, empty otherwise. The column is
-- nullable so that an older build's staging table, made LIKE events, still takes the COPY that does not name it. Rows stored before this version read as true (the column's value for them)
-- and are folded from the table: windows before summaries_since are read from the events, as before. That time is
-- set ahead of now, past any row stored before the column (a row stamped by an instance whose clock runs ahead of
-- the database's): windows up to it read every row, summarized or not.
-- Building the index reads every partition once, while the table is locked.
ALTER TABLE events ADD COLUMN summarized boolean DEFAULT true;
ALTER TABLE events ALTER COLUMN summarized SET DEFAULT false;
CREATE INDEX events_unsummarized_idx ON events (received_at) WHERE summarized IS NOT TRUE;
CREATE TABLE report_summaries (
  summary_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  received_from timestamptz NOT NULL,
  received_to   timestamptz NOT NULL,
  summary       bytea NOT NULL
);
-- Written once, read once, deleted: compressing it would cost every commit for nothing.
ALTER TABLE report_summaries ALTER COLUMN summary SET STORAGE EXTERNAL;
CREATE INDEX report_summaries_received_from_idx ON report_summaries (received_from);
CREATE INDEX report_summaries_received_to_idx ON report_summaries (received_to);
-- The campaign a user-day is in the sketches of: a fold adds a user-day to them only when it is new or filed anew
-- (NULL for the days folded before: filed again, once, the first time they come back).
ALTER TABLE report_active ADD COLUMN campaign text;
-- When summaries began: with no events yet, from the start; else a minute past now, as above.
ALTER TABLE report_watermark ADD COLUMN summaries_since timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE report_watermark ALTER COLUMN summaries_since DROP DEFAULT;
SELECT set_config('tg_ingest.fold_version', '10', true);
UPDATE report_watermark SET summaries_since = clock_timestamp() + interval '1 minute'
WHERE EXISTS (SELECT 1 FROM events);
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '12' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 12)';
  END IF;
  RETURN NEW;
END $$;
`,
  },
  {
    version: 13,
    name: 'report users changed by others',
    sql: `
-- The aggregator remembers which users report_active files on which days (src/reports/filed-users.ts) while nothing
-- but its folds changed them. Whatever else deletes or changes rows of report_users or report_active (an erasure, a
-- hand edit, a restore) counts here, in its own transaction, and the count makes every instance forget.
ALTER TABLE report_watermark ADD COLUMN users_changed bigint NOT NULL DEFAULT 0;
CREATE FUNCTION report_users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A fold's own changes are what it remembers: it says so (src/reports/aggregator.ts), locally. (Such a setting
  -- reads '' once its transaction has ended.) An older build's fold does not, and counts.
  IF TG_OP = 'UPDATE' AND current_setting('tg_ingest.folding', true) = 'on' THEN
    RETURN NULL;
  END IF;
  UPDATE report_watermark SET users_changed = users_changed + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER report_users_changed AFTER UPDATE OR DELETE OR TRUNCATE ON report_users
  FOR EACH STATEMENT EXECUTE FUNCTION report_users_changed();
CREATE TRIGGER report_active_changed AFTER UPDATE OR DELETE OR TRUNCATE ON report_active
  FOR EACH STATEMENT EXECUTE FUNCTION report_users_changed();
-- The count is not the watermark: it moves without a fold.
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.received_before, NEW.summaries_since) IS DISTINCT FROM (OLD.received_before, OLD.summaries_since)
     AND current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '12' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 12)';
  END IF;
  RETURN NEW;
END $$;
`,
  },
  {
    version: 14,
    name: 'per-token rate limits',
    sql: `
-- A token's own bucket (PATCH /admin/tokens/:tokenId); NULL: RATE_LIMIT_PER_MIN and RATE_LIMIT_BURST. Adding nullable
-- columns without a default rewrites nothing: the lock is held for a moment.
ALTER TABLE api_tokens
  ADD COLUMN rate_limit_per_min integer CHECK (rate_limit_per_min BETWEEN 1 AND 60000000),
  ADD COLUMN rate_limit_burst integer CHECK (rate_limit_burst BETWEEN 1 AND 10000000);
`,
  },
  {
    version: 15,
    name: 'events findable by user',
    sql: `
-- What an erasure reads: a summary of each range of 16 pages of events saying which users it may hold (a bloom filter,
-- 1 in 10,000 false), so that an erasure reads the ranges that may hold its users, not the whole table
-- (src/privacy/eraser.ts). A btree would cost every insert; this costs an insert nothing while its range is not yet
-- summarized (summaries are made by VACUUM, and by the eraser before it reads), and ingestion appends. Built on every
-- partition, new ones too; on an existing table the build reads it once, holding off writes meanwhile
-- (docs/operations.md#upgrading).
CREATE INDEX events_user_bloom ON events
  USING brin (platform_user_id int8_bloom_ops(n_distinct_per_range = 600, false_positive_rate = 0.0001))
  WITH (pages_per_range = 16);
`,
  },
];

const LOCK_KEY = 7_240_311_905; // arbitrary, constant: the advisory lock of this service's migrations

export async function migrate(sql: Sql): Promise<number[]> {
  const applied: number[] = [];
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const done = new Set(
      (await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version),
    );
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
  });
  return applied;
}

export async function schemaReady(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ v: number | null }[]>`SELECT max(version) AS v FROM schema_migrations`;
  return row?.v === MIGRATIONS[MIGRATIONS.length - 1]!.version;
}
