import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 19,
  name: 'the lake',
  sql: `
-- A lake directory (EXPORT_DIR) and how far its Parquet copy of the events is (src/lake/exporter.ts). The directory
-- holds its id in a file, so an emptied or replaced one is told from the one this row describes. Rows received from
-- new_from on are exported as they come (every row received before exported_before is in the lake); the history
-- before new_from is exported back to front, down to history_from. A window is recorded in *_pending before its
-- files are written, and the watermark moves only once they are in place: a crash between the two writes the same
-- window again, under the same file names.
CREATE TABLE lake_dirs (
  lake_id          uuid PRIMARY KEY,
  path             text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- Set when another directory took this path's place: the row is kept for the record, never written again.
  retired_at       timestamptz,
  new_from         timestamptz NOT NULL,
  exported_before  timestamptz NOT NULL,
  pending_before   timestamptz,
  -- The history is in the lake down to here ('-infinity': all of it).
  history_from     timestamptz NOT NULL,
  history_pending  timestamptz,
  -- The last UTC day a users snapshot was written.
  users_day        date,
  exported_at      timestamptz
);
-- How many lake files an erasure rewrote without its users.
ALTER TABLE erasures ADD COLUMN lake_files integer NOT NULL DEFAULT 0;
`,
};
