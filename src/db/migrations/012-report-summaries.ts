import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 12,
  name: 'report summaries',
  sql: `
-- Each group commit stores what its rows add to the reports, a few bytes an event (src/pipeline/summary.ts), and
-- the aggregator folds those instead of reading the events again. A row no summary holds says summarized = false
-- (moved in from the writer's staging table, written by hand, or by an older build during a rolling upgrade: the
-- column's default) or NULL (written so by hand) and is found by the partial index, empty otherwise. The column is
-- nullable so that an older build's staging table, made LIKE events, still takes the COPY that does not name it. Rows stored before this version read as true (the column's value for them)
-- and are folded from the table: windows before summaries_since are read from the events, as before. That time is
-- set ahead of now, past any row stored before the column (a row stamped by an instance whose clock runs ahead of
-- the database's): windows up to it read every row, summarized or not.
-- Building the index reads every partition once, while the table is locked.
ALTER TABLE events ADD COLUMN summarized boolean DEFAULT true;
ALTER TABLE events ALTER COLUMN summarized SET DEFAULT false;
CREATE INDEX events_unsummarized_idx ON events (received_at) WHERE summarized IS NOT TRUE;
CREATE TABLE report_summaries (
  summary_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  received_from timestamptz NOT NULL,
  received_to   timestamptz NOT NULL,
  summary       bytea NOT NULL
);
-- Written once, read once, deleted: compressing it would cost every commit for nothing.
ALTER TABLE report_summaries ALTER COLUMN summary SET STORAGE EXTERNAL;
CREATE INDEX report_summaries_received_from_idx ON report_summaries (received_from);
CREATE INDEX report_summaries_received_to_idx ON report_summaries (received_to);
-- The campaign a user-day is in the sketches of: a fold adds a user-day to them only when it is new or filed anew
-- (NULL for the days folded before: filed again, once, the first time they come back).
ALTER TABLE report_active ADD COLUMN campaign text;
-- When summaries began: with no events yet, from the start; else a minute past now, as above.
ALTER TABLE report_watermark ADD COLUMN summaries_since timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE report_watermark ALTER COLUMN summaries_since DROP DEFAULT;
SELECT set_config('tg_ingest.fold_version', '10', true);
UPDATE report_watermark SET summaries_since = clock_timestamp() + interval '1 minute'
WHERE EXISTS (SELECT 1 FROM events);
CREATE OR REPLACE FUNCTION report_watermark_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tg_ingest.fold_version', true) IS DISTINCT FROM '12' THEN
    RAISE EXCEPTION 'the report aggregates are kept by a newer build (fold version 12)';
  END IF;
  RETURN NEW;
END $$;
`,
};
