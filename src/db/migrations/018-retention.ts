import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 18,
  name: 'retention',
  sql: `
-- First: after any fold under way, and before the next (which an older build could not make: the guard below), so
-- the cells start from the tables as they stand, and no fold waits on this migration while holding what it needs.
LOCK TABLE report_watermark IN EXCLUSIVE MODE;
-- The retention report's cells, kept as events are folded (src/reports/retention-sql.ts): the users of a cohort
-- (their first day, and their first campaign, '' for none) active on a day, and, a user counted once a week, in an
-- ISO week (weeks by their Monday); each under its campaign and under NULL (every campaign). Only cells up to 366
-- days (53 weeks) from their cohort, as far as a report reaches; keyed by campaign first, so a report reads its
-- campaign's (or every campaign's) cells alone. A fold that moves a user's first day back, or learns their first
-- campaign, moves their cells; an erasure takes them out.
CREATE TABLE report_retention (
  project_id uuid NOT NULL,
  cohort     date NOT NULL,
  day        date NOT NULL,
  campaign   text,
  users      bigint NOT NULL DEFAULT 0,
  UNIQUE NULLS NOT DISTINCT (project_id, campaign, cohort, day)
);
CREATE TABLE report_retention_weeks (
  project_id uuid NOT NULL,
  cohort     date NOT NULL,
  week       date NOT NULL,
  campaign   text,
  users      bigint NOT NULL DEFAULT 0,
  UNIQUE NULLS NOT DISTINCT (project_id, campaign, cohort, week)
);
-- The weeks a user was active in: a week counts a user once, whatever their days in it.
CREATE TABLE report_active_weeks (
  project_id uuid NOT NULL,
  user_id    bigint NOT NULL,
  week       date NOT NULL,
  PRIMARY KEY (project_id, user_id, week)
);
-- A user's days, found by the user: their cells move when their cohort does, and go when they are erased.
CREATE INDEX report_active_user_idx ON report_active (project_id, user_id, day);
INSERT INTO report_active_weeks (project_id, user_id, week)
SELECT DISTINCT project_id, user_id, date_trunc('week', day::timestamp)::date FROM report_active;
INSERT INTO report_retention (project_id, cohort, day, campaign, users)
SELECT a.project_id, u.first_day, a.day, c, count(*)
FROM report_active a JOIN report_users u USING (project_id, user_id)
CROSS JOIN LATERAL (VALUES (coalesce(u.first_campaign, '')), (NULL)) v(c)
WHERE a.day - u.first_day BETWEEN 0 AND 365
GROUP BY 1, 2, 3, 4;
INSERT INTO report_retention_weeks (project_id, cohort, week, campaign, users)
SELECT w.project_id, date_trunc('week', u.first_day::timestamp)::date, w.week, c, count(*)
FROM report_active_weeks w JOIN report_users u USING (project_id, user_id)
CROSS JOIN LATERAL (VALUES (coalesce(u.first_campaign, '')), (NULL)) v(c)
WHERE w.week - date_trunc('week', u.first_day::timestamp)::date BETWEEN 0 AND 371
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
