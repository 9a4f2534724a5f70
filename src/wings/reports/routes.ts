// The reports' routes: daily activity, retention, revenue, campaigns and mini-app sessions, as JSON or
// (`?format=csv`) the same numbers as CSV.
import { type AdminGuard, existingProject, pageLimit } from '../../admin/api.js';
import type { AdminStore } from '../../admin/store.js';
import { HttpError } from '../../base/errors.js';
import type { Route } from '../../http/route.js';
import type { Reply, Request } from '../../http/server.js';
import { adminOp, list, query } from '../../openapi/admin.js';
import { json, type Obj } from '../../openapi/operations.js';
import { CAMPAIGN_MAX_CHARS } from '../../pipeline/summary.js';
import type {
  CampaignRow,
  DailyRow,
  ReportStore,
  RetentionRow,
  RevenueRow,
  SessionsRow,
} from '../../reports/queries.js';
import { dayRange, type DayRange, toCsv } from '../../reports/range.js';

/** Days a daily report covers when the request names none. */
const DEFAULT_DAYS = 30;

/** A report: JSON, or with `?format=csv` the same numbers as CSV. */
const okCsv = (description: string, schema: Obj) => ({
  description: `${description} With \`format=csv\`: the same numbers as \`text/csv\` (RFC 4180, a header line).`,
  content: { ...json(schema), 'text/csv': { schema: { type: 'string' } } },
});
const DATE_SCHEMA = { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'A date, YYYY-MM-DD.' };
function reportQuery(defaultDays: number | null): Obj[] {
  const dflt = defaultDays === null ? 'every day' : `the ${defaultDays} days ending today`;
  return [
    query('from', `First day (UTC), included. Without from and to: ${dflt}; at most 366 days per call.`, DATE_SCHEMA),
    query(
      'to',
      'Last day (UTC), included; default today. Before from, malformed, or a range over 366 days: 400.',
      DATE_SCHEMA,
    ),
    query('format', 'json (default) or csv.', { type: 'string', enum: ['json', 'csv'] }),
  ];
}

function queryOf(req: Request): URLSearchParams {
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

export function retentionCsv(rows: RetentionRow[]): string {
  const width = rows[0]?.retained.length ?? 0;
  return toCsv(
    ['cohort', 'users', ...Array.from({ length: width }, (_, k) => `retained_${k}`)],
    rows.map((r) => [r.cohort, r.users, ...r.retained]),
  );
}

export function sessionsCsv(rows: SessionsRow[]): string {
  const platforms = [...new Set(rows.flatMap((r) => Object.keys(r.byPlatform)))].sort();
  return toCsv(
    [
      'day',
      'sessions',
      'users',
      'median_duration_s',
      'p90_duration_s',
      'sessions_per_user',
      ...platforms.map((p) => `sessions_${p}`),
    ],
    rows.map((r) => [
      r.day,
      r.sessions,
      r.users,
      r.medianDurationS,
      r.p90DurationS,
      r.sessionsPerUser,
      ...platforms.map((p) => r.byPlatform[p] ?? 0),
    ]),
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

export function reportsRoutes(projects: AdminStore, reports: ReportStore, guard: AdminGuard): Route[] {
  const project = (req: Request) => existingProject(projects, req);
  return [
    {
      method: 'get',
      path: '/admin/projects/:projectId/reports/daily',
      handler: guard(async (req) => {
        const q = queryOf(req);
        const f = format(q);
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.daily(await project(req), r);
        return f === 'csv' ? csv(`daily-${r.from}-${r.to}`, dailyCsv(rows)) : { status: 200, body: rows };
      }),
      operation: adminOp({
        operationId: 'getDailyReport',
        summary: 'Events, active and new users per day',
        description:
          "From aggregates the service keeps as events are stored (every commit once it is visible, within about two seconds at the defaults), never from a scan of the events. A day is the UTC date of the events' `eventDate`; only stored events count (no redelivery, in-request duplicate or rejected event). `activeUsers`: distinct users with a stored event that day; `newUsers`: users whose earliest stored event falls on that day. Every day of the range is listed, zeros included.",
        ids: ['ProjectId'],
        query: reportQuery(30),
        errors: ['bad_request'],
        success: { 200: okCsv('One row per day, oldest first.', list('DailyReportRow')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/reports/retention',
      handler: guard(async (req) => {
        const q = queryOf(req);
        const f = format(q);
        const by = q.get('by') ?? 'day';
        if (by !== 'day' && by !== 'week') throw new HttpError('bad_request', { message: 'by must be day or week.' });
        const campaign = q.get('campaign');
        if (campaign !== null && [...campaign].length > CAMPAIGN_MAX_CHARS)
          throw new HttpError('bad_request', { message: `campaign is longer than ${CAMPAIGN_MAX_CHARS} characters.` });
        // No stored campaign holds one (PostgreSQL text cannot), and the query would fail on it.
        if (campaign?.includes('\u0000'))
          throw new HttpError('bad_request', { message: 'campaign holds a NUL character.' });
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.retention(await project(req), r, by, campaign);
        return f === 'csv' ? csv(`retention-${by}-${r.from}-${r.to}`, retentionCsv(rows)) : { status: 200, body: rows };
      }),
      operation: adminOp({
        operationId: 'getRetentionReport',
        summary: 'Cohorts of new users and how many came back, day by day or week by week',
        description:
          "A cohort is the users whose earliest stored event (by `eventDate`, UTC) falls on a day of the range, or with `by=week` in an ISO week the range touches (named by its Monday). `retained[k]`: the cohort's users with a stored event k days (weeks) after its first, up to the range's end; `retained[0]` is `users`. Exact: from aggregates the service keeps as events are folded, like the daily report; when older events move a user's first day back, or their first campaign arrives, they move to their cohort; an erasure takes them out. Every cohort of the range is listed, zeros included, oldest first.",
        ids: ['ProjectId'],
        query: [
          ...reportQuery(30),
          query('by', 'day (default) or week (ISO weeks, Monday first).', { type: 'string', enum: ['day', 'week'] }),
          query(
            'campaign',
            'Only users whose first campaign (start_param) is this; empty: users who came without one. Up to 256 characters.',
            { type: 'string', maxLength: CAMPAIGN_MAX_CHARS },
          ),
        ],
        errors: ['bad_request'],
        success: { 200: okCsv('One row per cohort, oldest first.', list('RetentionReportRow')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/reports/sessions',
      handler: guard(async (req) => {
        const q = queryOf(req);
        const f = format(q);
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.sessions(await project(req), r);
        return f === 'csv' ? csv(`sessions-${r.from}-${r.to}`, sessionsCsv(rows)) : { status: 200, body: rows };
      }),
      operation: adminOp({
        operationId: 'getSessionsReport',
        summary: 'Mini-app sessions, users, lengths and platforms per day',
        description:
          "A session is a user's events of the webapp endpoint that carry one `propsString.session_id` (a UUID; @tg-ingest/webapp sends one per launch). It counts on the UTC day of its earliest `app_open`'s eventDate, with that event's `platform`; one without an `app_open` is not a session. Its length runs from the `app_open` to its latest `app_close` when that close is at most 30 minutes after its latest other event, else to that event, in whole seconds up to a day (86,400). A platform the messenger does not name counts as `other`. From aggregates the service keeps as events are stored, like the daily report; an erasure removes the users' sessions from them. Every day of the range is listed, zeros included.",
        ids: ['ProjectId'],
        query: reportQuery(30),
        errors: ['bad_request'],
        success: { 200: okCsv('One row per day, oldest first.', list('SessionsReportRow')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/reports/campaigns',
      handler: guard(async (req) => {
        const q = queryOf(req);
        const f = format(q);
        const r = range(q, DEFAULT_DAYS)!;
        const rows = await reports.campaigns(await project(req), r, pageLimit(q));
        return f === 'csv' ? csv(`campaigns-${r.from}-${r.to}`, campaignsCsv(rows)) : { status: 200, body: rows };
      }),
      operation: adminOp({
        operationId: 'getCampaignReport',
        summary: 'New users, active users, payers and net revenue per campaign (first touch)',
        description:
          "A user's campaign is the first start_param the service saw for them: `tg.start_param` of a bot_api event (the `/start` payload) or the `start_param` of a webapp session's signed initData. Users without one are under `null`. Over the range: `newUsers` whose earliest stored event falls in it, `activeUsers` with a stored event in it (distinct), `payers` with a payment in it, and net revenue (payments less refunds) per currency. Distinct users are exact while no day of the range has more than 512 users of the campaign and the range at most 8,192, estimated beyond (HyperLogLog, standard error 1.6%). Activity and payments count under the campaign known when they were folded: a user first seen without one counts under `null` until it arrives. Most new users first, `null` last.",
        ids: ['ProjectId'],
        query: [
          ...reportQuery(30),
          query(
            'limit',
            'Campaigns listed, those with the most new users first: 1–1000, default 100. The users without a campaign are listed besides.',
            {
              type: 'integer',
              minimum: 1,
              maximum: 10_000,
            },
          ),
        ],
        errors: ['bad_request'],
        success: { 200: okCsv('One row per campaign.', list('CampaignReportRow')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/reports/revenue',
      handler: guard(async (req) => {
        const q = queryOf(req);
        const f = format(q);
        const by = q.get('by');
        if (by !== null && by !== 'day') throw new HttpError('bad_request', { message: 'by must be day.' });
        const r = range(q, by === 'day' ? DEFAULT_DAYS : null);
        const rows = await reports.revenue(await project(req), r, by === 'day');
        return f === 'csv'
          ? csv(`revenue${r === null ? '' : `-${r.from}-${r.to}`}`, revenueCsv(rows))
          : { status: 200, body: rows };
      }),
      operation: adminOp({
        operationId: 'getRevenueReport',
        summary: 'Revenue and refunds per currency',
        description:
          "Sums `tg.total_amount` of `successful_payment` events from the bot_api endpoint per `tg.currency`, in the currency's smallest units, and of `refunded_payment` events alike; each charge (`tg.telegram_payment_charge_id`, else `tg.provider_payment_charge_id`) counts once, however often and by whichever connection it was reported. Stars (XTR) have no minor unit: their amounts are whole stars. Without `from` and `to`: every day; `by=day` adds a series per currency (30 days ending today by default). From the aggregates, like the daily report.",
        ids: ['ProjectId'],
        query: [
          ...reportQuery(null),
          query('by', 'day: each currency also lists every day of the range.', { type: 'string', enum: ['day'] }),
        ],
        errors: ['bad_request'],
        success: { 200: okCsv('One line per currency.', list('RevenueLine')) },
      }),
    },
  ];
}
