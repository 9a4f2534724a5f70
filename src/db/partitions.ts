// The monthly partitions of `events`: created ahead of need (the previous month through two months
// ahead), and, with EVENTS_RETENTION_MONTHS, old months dropped whole, never a row at a time.
// One instance at a time does it (an advisory lock); every instance runs it at start and hourly.
import type { Sql } from './connect.js';

const LOCK_KEY = 7_240_311_907;

function monthStart(d: Date, offset = 0): string {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, 1)).toISOString().slice(0, 10);
}

export interface Maintained {
  created: string[];
  dropped: string[];
}

export async function maintainPartitions(
  sql: Sql,
  retentionMonths: number | null,
  now = new Date(),
): Promise<Maintained> {
  return sql.begin(async (tx) => {
    const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok`;
    if (!lock?.ok) return { created: [], dropped: [] };
    const existing = new Set(
      (
        await tx<{ name: string }[]>`
      SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`
      ).map((r) => r.name),
    );
    const created: string[] = [];
    for (let k = -1; k <= 2; k++) {
      const month = monthStart(now, k);
      const name = `events_${month.slice(0, 7).replace('-', '_')}`;
      if (existing.has(name)) continue;
      await tx`SELECT tg_events_partition(${month}::date)`;
      created.push(name);
    }
    const dropped: string[] = [];
    if (retentionMonths !== null) {
      // Kept: the current month and the `retentionMonths` before it.
      const oldest = `events_${monthStart(now, -retentionMonths).slice(0, 7).replace('-', '_')}`;
      for (const name of [...existing].sort()) {
        if (/^events_\d{4}_\d{2}$/.test(name) && name < oldest) {
          await tx.unsafe(`DROP TABLE ${name}`);
          dropped.push(name);
        }
      }
    }
    return { created, dropped };
  }) as Promise<Maintained>;
}
