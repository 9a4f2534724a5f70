import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
