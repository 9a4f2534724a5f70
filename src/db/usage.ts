// A project's allowance and this calendar month's (UTC) usage, read by quota checks and the admin API alike.
import type { Sql } from './connect.js';

export interface Usage {
  /** "YYYY-MM", the database's current month in UTC. */
  month: string;
  eventAllowance: number | null;
  eventsBilled: number;
  eventsStored: number;
}

/** null: no such project. */
export async function readUsage(sql: Sql, projectId: string): Promise<Usage | null> {
  const [r] = await sql<{ event_allowance: string | null; billed: string; stored: string; month: string }[]>`
    SELECT p.event_allowance, coalesce(l.events_billed, 0) AS billed, coalesce(l.events_stored, 0) AS stored,
           to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM') AS month
    FROM projects p
    LEFT JOIN billing_usage l ON l.project_id = p.project_id AND l.month = (date_trunc('month', now() AT TIME ZONE 'UTC'))::date
    WHERE p.project_id = ${projectId}`;
  if (r === undefined) return null;
  return {
    month: r.month,
    eventAllowance: r.event_allowance === null ? null : Number(r.event_allowance),
    eventsBilled: Number(r.billed),
    eventsStored: Number(r.stored),
  };
}
