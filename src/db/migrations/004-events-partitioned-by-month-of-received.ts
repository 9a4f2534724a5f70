import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 4,
  name: 'events partitioned by month of received_at',
  sql: `
-- A month's partition of events, created when missing, with its own unique index: a unique index can
-- only hold within a partition, and (project_id, event_id) is what deduplication relies on.
CREATE FUNCTION tg_events_partition(month date) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
  part text := format('events_%s', to_char(month, 'YYYY_MM'));
BEGIN
  IF to_regclass(part) IS NULL THEN
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)', part,
                   (month::timestamp AT TIME ZONE 'UTC'), ((month + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (project_id, event_id)', part || '_project_event_key', part);
  END IF;
  RETURN part;
END
$fn$;

-- Raised when an event of this transaction was already stored in another month's partition: the
-- writer then redoes the batch as for any other redelivery.
CREATE FUNCTION tg_stored_before(stored boolean) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  IF stored THEN
    RAISE unique_violation USING MESSAGE = 'an event of this batch was stored in an earlier month', CONSTRAINT = 'events_project_event_key';
  END IF;
END
$fn$;

ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_payments_idx RENAME TO events_unpartitioned_payments_idx;
ALTER TABLE events_unpartitioned RENAME CONSTRAINT events_project_event_key TO events_unpartitioned_key;
CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (received_at);
-- The revenue report reads only payments; a partial index keeps it cheap to maintain.
CREATE INDEX events_payments_idx ON events (project_id) WHERE event_name = 'successful_payment';
SELECT tg_events_partition(m::date) FROM (
  SELECT DISTINCT date_trunc('month', received_at AT TIME ZONE 'UTC') AS m FROM events_unpartitioned
  UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + k * interval '1 month' FROM generate_series(-1, 2) AS k
) months;
INSERT INTO events SELECT * FROM events_unpartitioned;
DROP TABLE events_unpartitioned;
`,
};
