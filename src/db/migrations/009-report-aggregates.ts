import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
