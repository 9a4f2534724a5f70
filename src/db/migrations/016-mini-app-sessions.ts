import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 16,
  name: 'mini-app sessions',
  sql: `
-- The sessions report (src/reports/session-sql.ts): one row a mini-app session (events of the webapp endpoint whose
-- propsString.session_id is a UUID), kept by the aggregator's folds; a session counts from its app_open on.
CREATE TABLE report_sessions (
  project_id uuid NOT NULL,
  session_id uuid NOT NULL,
  user_id    bigint NOT NULL,
  -- The earliest app_open's eventDate and platform: NULL until one arrives (until then it is not a session).
  opened_at  timestamptz,
  platform   text,
  -- The latest eventDate of an event other than app_close, and of app_close.
  last_at    timestamptz,
  closed_at  timestamptz,
  -- A user's own: another user naming the same id has a session of their own. An erasure finds a user's by the key.
  PRIMARY KEY (project_id, user_id, session_id)
);
-- Per UTC day of app_open: sessions and distinct users; sessions by platform ('' for none); sessions by whole seconds
-- of length (medians and percentiles, exact to the second); each user's sessions (what makes users exact).
CREATE TABLE report_session_days (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  sessions   bigint NOT NULL DEFAULT 0,
  users      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day)
);
CREATE TABLE report_session_platforms (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  platform   text NOT NULL,
  sessions   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day, platform)
);
CREATE TABLE report_session_lengths (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  seconds    integer NOT NULL,
  sessions   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day, seconds)
);
CREATE TABLE report_session_users (
  project_id uuid NOT NULL,
  day        date NOT NULL,
  user_id    bigint NOT NULL,
  sessions   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day, user_id)
);
-- An erasure removes a user's rows here: found by the user, whatever the day.
CREATE INDEX report_session_users_user_idx ON report_session_users (project_id, user_id);
-- A commit's session records, beside its summary: a build before this one reads the summary alone.
ALTER TABLE report_summaries ADD COLUMN sessions bytea;
ALTER TABLE report_summaries ALTER COLUMN sessions SET STORAGE EXTERNAL;
-- Folds of this version keep the tables above: an older build's fold is refused, as each new fold version's.
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.received_before, NEW.summaries_since) IS DISTINCT FROM (OLD.received_before, OLD.summaries_since)
     AND current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '16' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 16)';
  END IF;
  RETURN NEW;
END $$;
`,
};
