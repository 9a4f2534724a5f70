import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 18,
  name: 'retention',
  sql: `
-- The retention report's cells, kept as events are folded (src/reports/fold-sql.ts): the users of a cohort (their
-- first day, and their first campaign, '' for none) active on a day, and, a user counted once a week, in an ISO week
-- (weeks by their Monday). A fold that moves a user's first day back, or learns their first campaign, moves their
-- cells; an erasure takes them out.
CREATE TABLE report_retention (
  project_id uuid NOT NULL,
  cohort     date NOT NULL,
  day        date NOT NULL,
  campaign   text NOT NULL,
  users      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, cohort, day, campaign)
);
CREATE TABLE report_retention_weeks (
  project_id uuid NOT NULL,
  cohort     date NOT NULL,
  week       date NOT NULL,
  campaign   text NOT NULL,
  users      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, cohort, week, campaign)
);
-- The weeks a user was active in: a week counts a user once, whatever their days in it.
CREATE TABLE report_active_weeks (
  project_id uuid NOT NULL,
  week       date NOT NULL,
  user_id    bigint NOT NULL,
  PRIMARY KEY (project_id, week, user_id)
);
-- A user's days, found by the user: their cells move when their cohort does, and go when they are erased.
CREATE INDEX report_active_user_idx ON report_active (project_id, user_id);
-- After any fold under way, and before the next (which an older build could not make: the guard below): the cells
-- start from the tables as they stand.
LOCK TABLE report_watermark IN EXCLUSIVE MODE;
INSERT INTO report_active_weeks (project_id, week, user_id)
SELECT DISTINCT project_id, date_trunc('week', day::timestamp)::date, user_id FROM report_active;
INSERT INTO report_retention (project_id, cohort, day, campaign, users)
SELECT a.project_id, u.first_day, a.day, coalesce(u.first_campaign, ''), count(*)
FROM report_active a JOIN report_users u USING (project_id, user_id)
GROUP BY 1, 2, 3, 4;
INSERT INTO report_retention_weeks (project_id, cohort, week, campaign, users)
SELECT w.project_id, date_trunc('week', u.first_day::timestamp)::date, w.week, coalesce(u.first_campaign, ''), count(*)
FROM report_active_weeks w JOIN report_users u USING (project_id, user_id)
GROUP BY 1, 2, 3, 4;
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.received_before, NEW.summaries_since, NEW.folds) IS DISTINCT FROM
       (OLD.received_before, OLD.summaries_since, OLD.folds)
     AND current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '18' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 18)';
  END IF;
  RETURN NEW;
END $$;
`,
};
