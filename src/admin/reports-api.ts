// The admin API's reports: daily activity, revenue and campaigns, as JSON or (`?format=csv`) the same numbers as CSV.
import { HttpError } from '../errors.js';
import type { HttpServer, Reply, Request } from '../http/server.js';
import type { CampaignRow, DailyRow, ReportStore, RevenueRow } from '../reports/queries.js';
import { dayRange, type DayRange, toCsv } from '../reports/range.js';
import { type AdminGuard, existingProject, pageLimit } from './api.js';
import type { AdminStore } from './store.js';

/** Days a daily report covers when the request names none. */
const DEFAULT_DAYS = 30;

function query(req: Request): URLSearchParams {
  return new URLSearchParams(req.query);
}

function format(q: URLSearchParams): 'json' | 'csv' {
  const f = q.get('format') ?? 'json';
  if (f !== 'json' && f !== 'csv') throw new HttpError('bad_request', { message: 'format must be json or csv.' });
  return f;
}

function range(q: URLSearchParams, defaultDays: number | null): DayRange | null {
  const r = dayRange(q, new Date(), defaultDays);
  if (r === null) return null;
  if (!r.ok) throw new HttpError('bad_request', { message: `${r.message}.` });
  return r.range;
}

function csv(name: string, body: string): Reply {
  return {
    status: 200,
    contentType: 'text/csv; charset=utf-8',
    headers: { 'Content-Disposition': `attachment; filename="${name}.csv"` },
    body,
  };
}

export function dailyCsv(rows: DailyRow[]): string {
  const types = Object.keys(rows[0]?.eventsByType ?? {});
  return toCsv(
    ['day', 'events', ...types.map((t) => `events_${t}`), 'active_users', 'new_users'],
    rows.map((r) => [r.day, r.events, ...types.map((t) => r.eventsByType[t] ?? 0), r.activeUsers, r.newUsers]),
  );
}

export function revenueCsv(rows: RevenueRow[]): string {
  const header = ['currency', 'day', 'payments', 'total_amount', 'refunds', 'refunded_amount', 'net_amount'];
  const line = (currency: string, day: string | null, t: Omit<RevenueRow, 'currency' | 'days'>) => [
    currency,
    day,
    t.payments,
    String(t.totalAmount),
    t.refunds,
    String(t.refundedAmount),
    String(t.netAmount),
  ];
  return toCsv(
    header,
    rows.flatMap((r) =>
      r.days === undefined ? [line(r.currency, null, r)] : r.days.map((d) => line(r.currency, d.day, d)),
    ),
  );
}

export function campaignsCsv(rows: CampaignRow[]): string {
  const currencies = [...new Set(rows.flatMap((r) => r.revenue.map((v) => v.currency)))].sort();
  return toCsv(
    ['campaign', 'new_users', 'active_users', 'payers', ...currencies.map((c) => `net_amount_${c}`)],
    rows.map((r) => [
      r.campaign,
      r.newUsers,
      r.activeUsers,
      r.payers,
      ...currencies.map((c) => String(r.revenue.find((v) => v.currency === c)?.netAmount ?? 0)),
    ]),
  );
}

export function mountReports(server: HttpServer, projects: AdminStore, reports: ReportStore, guard: AdminGuard): void {
  const project = (req: Request) => existingProject(projects, req);
  server
    .route(
      'get',
      '/admin/projects/:projectId/reports/daily',
      guard(async (req) => {
        const q = query(req);
        const f = format(q);
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.daily(await project(req), r);
        return f === 'csv' ? csv(`daily-${r.from}-${r.to}`, dailyCsv(rows)) : { status: 200, body: rows };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/reports/campaigns',
      guard(async (req) => {
        const q = query(req);
        const f = format(q);
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.campaigns(await project(req), r, pageLimit(q));
        return f === 'csv' ? csv(`campaigns-${r.from}-${r.to}`, campaignsCsv(rows)) : { status: 200, body: rows };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/reports/revenue',
      guard(async (req) => {
        const q = query(req);
        const f = format(q);
        const by = q.get('by');
        if (by !== null && by !== 'day') throw new HttpError('bad_request', { message: 'by must be day.' });
        const r = range(q, by === 'day' ? DEFAULT_DAYS : null);
        const rows = await reports.revenue(await project(req), r, by === 'day');
        return f === 'csv'
          ? csv(`revenue${r === null ? '' : `-${r.from}-${r.to}`}`, revenueCsv(rows))
          : { status: 200, body: rows };
      }),
    );
}
