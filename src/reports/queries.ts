// The reports, read from the aggregates alone: a 90-day report reads at most a few hundred rows per series,
// whatever the number of events behind them.
import type { Sql } from '../db/connect.js';
import { EVENT_TYPES } from '../pipeline/event.js';
import { type DayRange, daysOf, mondayOf } from './range.js';
import { retentionCells } from './retention-sql.js';
import { Distinct } from './sketch.js';

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

export interface RetentionRow {
  /** The cohort's first day, or with by=week the Monday of its ISO week. */
  cohort: string;
  users: number;
  /** Users of the cohort active k days (weeks) after it began, k from 0 up to the range's end; [0] is users. */
  retained: number[];
}

export interface CampaignRow {
  /** The users' first start_param; null: users who came without one. */
  campaign: string | null;
  newUsers: number;
  activeUsers: number;
  payers: number;
  revenue: { currency: string; netAmount: number | string }[];
}

export interface SessionsRow {
  /** The UTC day of the sessions' app_open. */
  day: string;
  sessions: number;
  /** Distinct users with a session that day. */
  users: number;
  /** Whole seconds; null on a day without sessions. */
  medianDurationS: number | null;
  p90DurationS: number | null;
  sessionsPerUser: number;
  /** Sessions by the messenger's platform name ('' for none given). */
  byPlatform: Record<string, number>;
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

  /**
   * Retention of the cohorts beginning in the range (by day, or by ISO week: the weeks it touches), of users of one
   * first campaign ('' for none) or of all (null). Every cohort listed, zeros included.
   */
  async retention(
    projectId: string,
    range: DayRange,
    by: 'day' | 'week',
    campaign: string | null,
  ): Promise<RetentionRow[]> {
    const first = by === 'day' ? range.from : mondayOf(range.from);
    const last = by === 'day' ? range.to : mondayOf(range.to);
    const cells = await this.sql.unsafe<{ cohort: string; at: string; users: number }[]>(
      retentionCells(by, campaign !== null),
      campaign === null ? [projectId, first, last] : [projectId, first, last, campaign],
    );
    const byCohort = new Map<string, Map<string, number>>();
    for (const c of cells) {
      let row = byCohort.get(c.cohort);
      if (row === undefined) byCohort.set(c.cohort, (row = new Map()));
      row.set(c.at, c.users);
    }
    const steps = daysOf({ from: first, to: last }).filter((_, i) => by === 'day' || i % 7 === 0);
    return steps.map((cohort, i) => {
      const row = byCohort.get(cohort);
      const retained = steps.slice(i).map((at) => row?.get(at) ?? 0);
      return { cohort, users: retained[0]!, retained };
    });
  }

  /** Mini-app sessions per day of the range, zeros included. */
  async sessions(projectId: string, range: DayRange): Promise<SessionsRow[]> {
    const [days, platforms, lengths] = await Promise.all([
      this.sql<{ day: string; sessions: string; users: string }[]>`
        SELECT day::text, sessions::text, users::text FROM report_session_days
        WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to} AND sessions > 0`,
      this.sql<{ day: string; platform: string; sessions: string }[]>`
        SELECT day::text, platform, sessions::text FROM report_session_platforms
        WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to} AND sessions > 0`,
      // Nearest-rank percentiles per day: the smallest length at or below which at least that share of the day's
      // sessions lie. Worked out here, a row a day: a day may hold up to 86,401 lengths.
      this.sql<{ day: string; median: number; p90: number }[]>`
        SELECT day::text, min(seconds) FILTER (WHERE upto >= ceil(0.5 * total)) AS median,
               min(seconds) FILTER (WHERE upto >= ceil(0.9 * total)) AS p90
        FROM (
          SELECT day, seconds, sum(sessions) OVER (PARTITION BY day ORDER BY seconds) AS upto,
                 sum(sessions) OVER (PARTITION BY day) AS total
          FROM report_session_lengths
          WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to} AND sessions > 0
        ) l
        GROUP BY day`,
    ]);
    const rows = new Map<string, SessionsRow>();
    for (const day of daysOf(range))
      rows.set(day, {
        day,
        sessions: 0,
        users: 0,
        medianDurationS: null,
        p90DurationS: null,
        sessionsPerUser: 0,
        byPlatform: {},
      });
    for (const d of days) {
      const r = rows.get(d.day)!;
      r.sessions = Number(d.sessions);
      r.users = Number(d.users);
      r.sessionsPerUser = r.users > 0 ? r.sessions / r.users : 0;
    }
    for (const p of platforms) rows.get(p.day)!.byPlatform[p.platform] = Number(p.sessions);
    for (const l of lengths) {
      const r = rows.get(l.day)!;
      r.medianDurationS = l.median;
      r.p90DurationS = l.p90;
    }
    return [...rows.values()];
  }

  /** The `limit` campaigns with the most new users in the range, and the users without one. */
  campaigns(projectId: string, range: DayRange, limit: number): Promise<CampaignRow[]> {
    return campaignRows(this.sql, projectId, range, limit);
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

/**
 * Campaigns by first touch, from the per-day aggregates: new users and revenue are sums; active users and payers
 * over the range are unions of the days' sketches (exact up to EXACT_MAX users, estimated beyond).
 */
async function campaignRows(sql: Sql, projectId: string, range: DayRange, limit: number): Promise<CampaignRow[]> {
  // The campaigns to show, from their counters alone: a bot with a referral code per user has as many campaigns
  // as users, and only the shown ones' sketches are read.
  const top = await sql<{ campaign: string }[]>`
    SELECT campaign FROM report_campaign_days
    WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to}
    GROUP BY campaign ORDER BY campaign = '' DESC, sum(new_users) DESC, campaign LIMIT ${limit + 1}`;
  const named = top.map((t) => t.campaign).filter((c) => c !== '');
  const shown = [...named.slice(0, limit), ...(named.length < top.length ? [''] : [])];
  const [days, revenue] = await Promise.all([
    sql<{ campaign: string; new_users: string; active: Buffer | null; payers: Buffer | null }[]>`
      SELECT campaign, new_users::text, active, payers FROM report_campaign_days
      WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to} AND campaign = ANY(${shown})`,
    sql<{ campaign: string; currency: string; net: string }[]>`
      SELECT campaign, currency, sum(net_amount)::text AS net FROM report_campaign_revenue
      WHERE project_id = ${projectId} AND day BETWEEN ${range.from} AND ${range.to} AND campaign = ANY(${shown})
      GROUP BY 1, 2 ORDER BY 2`,
  ]);
  const rows = new Map<
    string,
    { newUsers: number; active: Distinct; payers: Distinct; revenue: CampaignRow['revenue'] }
  >();
  const row = (campaign: string) => {
    let r = rows.get(campaign);
    if (r === undefined) {
      r = { newUsers: 0, active: new Distinct(), payers: new Distinct(), revenue: [] };
      rows.set(campaign, r);
    }
    return r;
  };
  for (const d of days) {
    const r = row(d.campaign);
    r.newUsers += Number(d.new_users);
    if (d.active) r.active.addSketch(d.active);
    if (d.payers) r.payers.addSketch(d.payers);
  }
  for (const v of revenue)
    row(v.campaign).revenue.push({ currency: v.currency, netAmount: amount(v.net.split('.')[0]!) });
  const out: CampaignRow[] = [];
  for (const [campaign, r] of rows) {
    const c: CampaignRow = {
      campaign: campaign === '' ? null : campaign,
      newUsers: r.newUsers,
      activeUsers: r.active.count(),
      payers: r.payers.count(),
      revenue: r.revenue,
    };
    // A campaign whose only user moved to another day or campaign is left with nothing to show.
    if (c.newUsers !== 0 || c.activeUsers !== 0 || c.payers !== 0 || c.revenue.length > 0) out.push(c);
  }
  // Most new users first; the users without a campaign last.
  return out.sort((a, b) =>
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
