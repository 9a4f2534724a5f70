// Leases of a project's monthly allowance in PostgreSQL, one row per (project, month, instance).
// A lease counts, for the others, as what its instance may still bill: what it was granted less
// what it has billed since, until its hold ends (the lease's time plus what an admitted batch may
// take to commit). Renewals of a project's month are serialized by an advisory lock.
import type { Sql } from '../db/connect.js';
import type { Grant, LeaseStore } from './quota.js';

export interface LeaseOptions {
  instanceId: string;
  /** The lease admits events for this long… */
  leaseMs: number;
  /** …and counts for the others this much longer, while its last batches commit. */
  holdMs: number;
}

export class PgLeaseStore implements LeaseStore {
  constructor(
    private readonly sql: Sql,
    private readonly o: LeaseOptions,
  ) {}

  renew(projectId: string, inflight: number, want: number): Promise<Grant> {
    const me = this.o.instanceId;
    return this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`quota:${projectId}`}, 0))`;
      const [r] = await tx<
        { allowance: string | null; billed: string; mine: string; others: string; holders: number }[]
      >`
        WITH month AS (SELECT (date_trunc('month', now() AT TIME ZONE 'UTC'))::date AS m),
        ledger AS (
          SELECT instance_id, sum(events_billed) AS billed FROM billing_ledger, month
          WHERE project_id = ${projectId} AND billing_ledger.month = month.m GROUP BY instance_id
        ),
        live AS (
          SELECT greatest(0, l.events - (coalesce(g.billed, 0) - l.billed_at_grant)) AS outstanding
          FROM quota_leases l CROSS JOIN month LEFT JOIN ledger g USING (instance_id)
          WHERE l.project_id = ${projectId} AND l.month = month.m AND l.instance_id <> ${me} AND l.hold_until > now()
        )
        SELECT (SELECT event_allowance FROM projects WHERE project_id = ${projectId}) AS allowance,
               coalesce((SELECT sum(billed) FROM ledger), 0) AS billed,
               coalesce((SELECT billed FROM ledger WHERE instance_id = ${me}), 0) AS mine,
               coalesce((SELECT sum(outstanding) FROM live), 0) AS others,
               (SELECT count(*)::int FROM live WHERE outstanding > 0) AS holders`;
      const allowance = r!.allowance === null ? null : Number(r!.allowance);
      const billed = Number(r!.billed);
      if (allowance === null) return { allowance, billed, granted: Number.MAX_SAFE_INTEGER };
      // In-flight events of this instance are covered by its lease row, not by the new room.
      const remaining = allowance - billed - Number(r!.others) - inflight;
      // What is left is shared among the instances holding room, so none sits on what another needs.
      const share = Math.ceil(remaining / (r!.holders + 1));
      const granted = Math.max(0, Math.min(want, remaining, Math.max(share, 1)));
      await tx`DELETE FROM quota_leases WHERE project_id = ${projectId} AND hold_until < now() - interval '1 hour'`;
      await tx`
        INSERT INTO quota_leases (project_id, month, instance_id, events, billed_at_grant, hold_until)
        VALUES (${projectId}, (date_trunc('month', now() AT TIME ZONE 'UTC'))::date, ${me}, ${inflight + granted}, ${Number(r!.mine)},
                now() + make_interval(secs => ${(this.o.leaseMs + this.o.holdMs) / 1000}))
        ON CONFLICT (project_id, month, instance_id) DO UPDATE SET
          events = excluded.events, billed_at_grant = excluded.billed_at_grant, hold_until = excluded.hold_until`;
      return { allowance, billed, granted };
    }) as Promise<Grant>;
  }
}
