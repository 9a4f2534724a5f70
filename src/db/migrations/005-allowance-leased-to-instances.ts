import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 5,
  name: 'allowance leased to instances',
  sql: `
-- Each instance charges ledger rows of its own, so that what it billed since a lease was granted is known.
ALTER TABLE billing_ledger ADD COLUMN instance_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE billing_ledger DROP CONSTRAINT billing_ledger_pkey;
ALTER TABLE billing_ledger ADD PRIMARY KEY (project_id, month, instance_id, shard);

-- A block of a project's monthly allowance that an instance may admit events against.
CREATE TABLE quota_leases (
  project_id      uuid NOT NULL,
  month           date NOT NULL,
  instance_id     uuid NOT NULL,
  -- Events the instance may bill beyond what it had billed when the lease was granted.
  events          bigint NOT NULL,
  billed_at_grant bigint NOT NULL,
  -- Counted by the other instances until then.
  hold_until      timestamptz NOT NULL,
  PRIMARY KEY (project_id, month, instance_id)
);
`,
};
