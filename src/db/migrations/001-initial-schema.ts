import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
