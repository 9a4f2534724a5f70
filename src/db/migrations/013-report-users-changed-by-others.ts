import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 13,
  name: 'report users changed by others',
  sql: `
-- The aggregator remembers which users report_active files on which days (src/reports/filed-users.ts) while nothing
-- but its folds changed them. Whatever else deletes or changes rows of report_users or report_active (an erasure, a
-- hand edit, a restore) counts here, in its own transaction, and the count makes every instance forget.
ALTER TABLE report_watermark ADD COLUMN users_changed bigint NOT NULL DEFAULT 0;
CREATE FUNCTION report_users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A fold's own changes are what it remembers: it says so (src/reports/aggregator.ts), locally. (Such a setting
  -- reads '' once its transaction has ended.) An older build's fold does not, and counts.
  IF TG_OP = 'UPDATE' AND current_setting('tg_ingest.folding', true) = 'on' THEN
    RETURN NULL;
  END IF;
  UPDATE report_watermark SET users_changed = users_changed + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER report_users_changed AFTER UPDATE OR DELETE OR TRUNCATE ON report_users
  FOR EACH STATEMENT EXECUTE FUNCTION report_users_changed();
CREATE TRIGGER report_active_changed AFTER UPDATE OR DELETE OR TRUNCATE ON report_active
  FOR EACH STATEMENT EXECUTE FUNCTION report_users_changed();
-- The count is not the watermark: it moves without a fold.
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.received_before, NEW.summaries_since) IS DISTINCT FROM (OLD.received_before, OLD.summaries_since)
     AND current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '12' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 12)';
  END IF;
  RETURN NEW;
END $$;
`,
};
