import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
