// The reports, read from the aggregates alone: a 90-day report reads at most a few hundred rows per series,
// whatever the number of events behind them.
import type { Sql } from '../db/connect.js';
import { EVENT_TYPES } from '../pipeline/event.js';
import { type DayRange, daysOf } from './range.js';

export interface DailyRow {
  day: string;
  events: number;
  eventsByType: Record<string, number>;
  activeUsers: number;
  newUsers: number;
}

export interface RevenueTotals {
  totalAmount: number | string;
  refundedAmount: number | string;
  netAmount: number | string;
  payments: number;
  refunds: number;
}

export interface RevenueRow extends RevenueTotals {
  currency: string;
  /** With `by=day`: every day of the range. */
  days?: ({ day: string } & RevenueTotals)[];
}

export interface CampaignRow {
  /** The users' first start_param; null: users who came without one. */
  campaign: string | null;
  newUsers: number;
  activeUsers: number;
  payers: number;
  revenue: { currency: string; netAmount: number | string }[];
}

/** Amounts are sums of integers in minor units: a number while exact, else its digits. */
const amount = (v: string): number | string => (Number.isSafeInteger(Number(v)) ? Number(v) : v);

export class ReportStore {
  constructor(private readonly sql: Sql) {}

  async daily(projectId: string, range: DayRange): Promise<DailyRow[]> {
    const [types, days] = await Promise.all([
      this.sql<{ day: string; event_type: string; events: string }[]>`
        SELECT day::text, event_type, events::text FROM report_day_types
        WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to}`,
      this.sql<{ day: string; active_users: string; new_users: string }[]>`
        SELECT day::text, active_users::text, new_users::text FROM report_days
        WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to}`,
    ]);
    const rows = new Map<string, DailyRow>();
    for (const day of daysOf(range)) {
      rows.set(day, {
        day,
        events: 0,
        eventsByType: Object.fromEntries([...EVENT_TYPES].map((t) => [t, 0])),
        activeUsers: 0,
        newUsers: 0,
      });
    }
    for (const t of types) {
      const r = rows.get(t.day)!;
      r.events += Number(t.events);
      r.eventsByType[t.event_type] = (r.eventsByType[t.event_type] ?? 0) + Number(t.events);
    }
    for (const d of days) {
      const r = rows.get(d.day)!;
      r.activeUsers = Number(d.active_users);
      r.newUsers = Number(d.new_users);
    }
    return [...rows.values()];
  }

  campaigns(projectId: string, range: DayRange): Promise<CampaignRow[]> {
    return campaignRows(this.sql, projectId, range);
  }

  /** Per currency; `range` null: every day. */
  async revenue(projectId: string, range: DayRange | null, byDay: boolean): Promise<RevenueRow[]> {
    const rows = await this.sql<
      { currency: string; day: string; payments: string; amount: string; refunds: string; refunded: string }[]
    >`
      SELECT currency, day::text, payments::text, amount::text, refunds::text, refunded_amount::text AS refunded
      FROM report_revenue_days
      WHERE project_id = ${projectId} ${range === null ? this.sql`` : this.sql`AND day BETWEEN ${range.from} AND ${range.to}`}
      ORDER BY currency, day`;
    type Row = (typeof rows)[number];
    const byCurrency = new Map<string, Row[]>();
    for (const r of rows) {
      const list = byCurrency.get(r.currency) ?? [];
      list.push(r);
      byCurrency.set(r.currency, list);
    }
    return [...byCurrency].map(([currency, list]) => {
      const row: RevenueRow = { currency, ...totals(list) };
      if (byDay && range !== null) {
        const byDate = new Map(list.map((r) => [r.day, r]));
        row.days = daysOf(range).map((day) => ({ day, ...totals(byDate.has(day) ? [byDate.get(day)!] : []) }));
      } else if (byDay) row.days = list.map((r) => ({ day: r.day, ...totals([r]) }));
      return row;
    });
  }
}

/** Campaigns by first touch: every figure of a user is filed under the first campaign the service saw for them. */
async function campaignRows(sql: Sql, projectId: string, range: DayRange): Promise<CampaignRow[]> {
  const [fresh, active, paid, revenue] = await Promise.all([
    sql<{ campaign: string | null; n: string }[]>`
      SELECT first_campaign AS campaign, count(*)::text AS n FROM report_users
      WHERE project_id = ${projectId} AND first_day BETWEEN ${range.from} AND ${range.to} GROUP BY 1`,
    // Exact distinct users over the range: its cost grows with the active user-days of the range.
    sql<{ campaign: string | null; n: string }[]>`
      SELECT u.first_campaign AS campaign, count(DISTINCT a.user_id)::text AS n
      FROM report_active a JOIN report_users u ON u.project_id = a.project_id AND u.user_id = a.user_id
      WHERE a.project_id = ${projectId} AND a.day BETWEEN ${range.from} AND ${range.to} GROUP BY 1`,
    sql<{ campaign: string | null; n: string }[]>`
      SELECT u.first_campaign AS campaign, count(DISTINCT p.user_id)::text AS n
      FROM report_payments p LEFT JOIN report_users u ON u.project_id = p.project_id AND u.user_id = p.user_id
      WHERE p.project_id = ${projectId} AND p.kind = 'payment' AND p.day BETWEEN ${range.from} AND ${range.to}
        AND p.user_id IS NOT NULL
      GROUP BY 1`,
    sql<{ campaign: string | null; currency: string; net: string }[]>`
      SELECT u.first_campaign AS campaign, p.currency,
             (coalesce(sum(p.amount) FILTER (WHERE p.kind = 'payment'), 0)
              - coalesce(sum(p.amount) FILTER (WHERE p.kind = 'refund'), 0))::text AS net
      FROM report_payments p LEFT JOIN report_users u ON u.project_id = p.project_id AND u.user_id = p.user_id
      WHERE p.project_id = ${projectId} AND p.day BETWEEN ${range.from} AND ${range.to}
      GROUP BY 1, 2 ORDER BY 2`,
  ]);
  const rows = new Map<string | null, CampaignRow>();
  const row = (campaign: string | null) => {
    let r = rows.get(campaign);
    if (r === undefined) {
      r = { campaign, newUsers: 0, activeUsers: 0, payers: 0, revenue: [] };
      rows.set(campaign, r);
    }
    return r;
  };
  for (const f of fresh) row(f.campaign).newUsers = Number(f.n);
  for (const a of active) row(a.campaign).activeUsers = Number(a.n);
  for (const p of paid) row(p.campaign).payers = Number(p.n);
  for (const v of revenue)
    row(v.campaign).revenue.push({ currency: v.currency, netAmount: amount(v.net.split('.')[0]!) });
  // Most new users first; the users without a campaign last.
  return [...rows.values()].sort((a, b) =>
    a.campaign === null ? 1 : b.campaign === null ? -1 : b.newUsers - a.newUsers || (a.campaign < b.campaign ? -1 : 1),
  );
}

function totals(list: { payments: string; amount: string; refunds: string; refunded: string }[]): RevenueTotals {
  let paid = 0n;
  let refunded = 0n;
  let payments = 0;
  let refunds = 0;
  for (const r of list) {
    paid += BigInt(r.amount.split('.')[0]!);
    refunded += BigInt(r.refunded.split('.')[0]!);
    payments += Number(r.payments);
    refunds += Number(r.refunds);
  }
  return {
    totalAmount: amount(String(paid)),
    refundedAmount: amount(String(refunded)),
    netAmount: amount(String(paid - refunded)),
    payments,
    refunds,
  };
}
