import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
