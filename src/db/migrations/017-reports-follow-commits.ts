import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 17,
  name: 'reports follow commits',
  sql: `
-- The aggregator folds every commit's report summary once it is visible, however late that is, and the rows no
-- summary holds likewise (it marks them folded): no clock lag. received_before stays where the windows by time
-- ended (history before summaries began is still read from the table by time); each fold counts itself in folds,
-- which tells an instance whether another folded since (src/reports/filed-users.ts), and moves the row, so an older
-- build's fold is refused.
ALTER TABLE report_watermark ADD COLUMN folds bigint NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.received_before, NEW.summaries_since, NEW.folds) IS DISTINCT FROM
       (OLD.received_before, OLD.summaries_since, OLD.folds)
     AND current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '17' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 17)';
  END IF;
  RETURN NEW;
END $$;
`,
};
