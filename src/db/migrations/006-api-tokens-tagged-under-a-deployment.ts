import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 6,
  name: 'API tokens tagged under a deployment secret',
  sql: `
-- Secrets every instance of the deployment shares. api_token_tag: the key of the tag that issued
-- API tokens carry (two random UUIDs: 244 random bits).
CREATE TABLE deployment_secrets (
  name  text PRIMARY KEY,
  value bytea NOT NULL
);
INSERT INTO deployment_secrets (name, value)
VALUES ('api_token_tag', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
-- Tokens issued before tags carry none; while one of them is live, untagged keys are looked up.
ALTER TABLE api_tokens ADD COLUMN tagged boolean NOT NULL DEFAULT false;
`,
};
