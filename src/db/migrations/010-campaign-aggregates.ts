import type { Migration } from './migration.js';

export const migration: Migration = {
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
};
