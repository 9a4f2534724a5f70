import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
