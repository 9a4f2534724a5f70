import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 15,
  name: 'events findable by user',
  sql: `
-- What an erasure reads: a summary of each range of 16 pages of events saying which users it may hold (a bloom filter,
-- 1 in 10,000 false), so that an erasure reads the ranges that may hold its users, not the whole table
-- (src/privacy/eraser.ts). A btree would cost every insert; this costs an insert nothing while its range is not yet
-- summarized (summaries are made by VACUUM, and by the eraser before it reads), and ingestion appends. Built on every
-- partition, new ones too; on an existing table the build reads it once, holding off writes meanwhile
-- (docs/operations.md#upgrading).
CREATE INDEX events_user_bloom ON events
  USING brin (platform_user_id int8_bloom_ops(n_distinct_per_range = 600, false_positive_rate = 0.0001))
  WITH (pages_per_range = 16);
`,
};
