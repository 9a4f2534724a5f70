import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 14,
  name: 'per-token rate limits',
  sql: `
-- A token's own bucket (PATCH /admin/tokens/:tokenId); NULL: RATE_LIMIT_PER_MIN and RATE_LIMIT_BURST. Adding nullable
-- columns without a default rewrites nothing: the lock is held for a moment.
ALTER TABLE api_tokens
  ADD COLUMN rate_limit_per_min integer CHECK (rate_limit_per_min BETWEEN 1 AND 60000000),
  ADD COLUMN rate_limit_burst integer CHECK (rate_limit_burst BETWEEN 1 AND 10000000);
`,
};
