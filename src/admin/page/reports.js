// @ts-check
// The admin page: the reports view. Events per day stacked by type, active and new users per day, net revenue per
// day per currency, mini-app sessions per day by platform and their lengths, a retention table of cohorts by day or
// week on a heat scale, and the campaigns table, over 7, 30 or 90 days or a chosen range; each with a CSV download of
// the same numbers. Charts are drawn by uPlot (served from /admin/page/uplot.js): small, fast, no dependencies, and
// it styles through the CSSOM, which the page's Content-Security-Policy allows.
import { $, el, fmt, latestOnly, STORAGE_KEY, state } from './core.js';
import { api, ApiError, describe, isSignedOutError, onSignOut } from './api.js';
import { formatMoney, formatUnits, fractionDigits } from './format.js';
// @ts-expect-error: served beside the page from node_modules/uplot (see src/admin/page-assets.ts); typed loosely here.
import uPlot from './uplot.js';

const TYPES = ['message', 'interaction', 'payment', 'membership', 'business', 'poll', 'reaction', 'boost', 'platform'];
const COLORS = ['#1f6feb', '#2da44e', '#bf8700', '#8250df', '#cf222e', '#1b7c83', '#e16f24', '#6e7781', '#a40e26'];
const DAY_S = 86_400;
/**
 * @typedef {{ from: string, to: string }} DayRange
 * @typedef {{ day: string, events: number, eventsByType: Record<string, number>, activeUsers: number,
 *   newUsers: number }} DailyRow
 * @typedef {{ currency: string, netAmount: unknown, payments: number, days: { day: string, netAmount: unknown }[] }} RevenueLine
 * @typedef {{ campaign: string | null, newUsers: number, activeUsers: number, payers: number,
 *   revenue: { currency: string, netAmount: unknown }[] }} CampaignRow
 * @typedef {{ day: string, sessions: number, users: number, medianDurationS: number | null,
 *   p90DurationS: number | null, sessionsPerUser: number, byPlatform: Record<string, number> }} SessionsRow
 * @typedef {{ cohort: string, users: number, retained: number[] }} RetentionRow
 * @typedef {{ destroy(): void, setSize(size: { width: number, height: number }): void, height: number }} Chart
 */
/**
 * The point a legend shows: the one hovered, else the range's last day (a legend of placeholders until hovered told
 * nothing). @param {{ data: (number | null)[][] }} u @param {number | null} k
 */
const shownAt = (u, k) => k ?? Math.max(0, (u.data[0]?.length ?? 1) - 1);
/** A line's value in the legend, as a whole number. */
const LINE_VALUE = {
  /** @param {{ data: (number | null)[][] }} u @param {unknown} _v @param {number} si @param {number | null} k */
  value: (u, _v, si, k) => {
    const v = u.data[si]?.[shownAt(u, k)];
    return v === null || v === undefined ? '–' : fmt(v);
  },
};
/** The x series of every chart: a day, shown as its date in the legend. */
const DAY_SERIES = {
  /** @param {{ data: (number | null)[][] }} u @param {unknown} _v @param {number} _si @param {number | null} k */
  value: (u, _v, _si, k) => {
    const t = u.data[0]?.[shownAt(u, k)];
    return t === null || t === undefined ? '' : new Date(t * 1000).toISOString().slice(0, 10);
  },
};
/**
 * Every chart's days: the scale reaches half a day past the first and last, so their bars are whole and the plot
 * ends where the range does.
 */
const DAY_SCALE = {
  time: true,
  /** @param {unknown} _u @param {number} min @param {number} max @returns {[number, number]} */
  range: (_u, min, max) => [min - DAY_S / 2, max + DAY_S / 2],
};
/** Ticks on UTC days, the reports' days, whatever the browser's zone (uPlot places them in local time otherwise). */
const UTC_DAYS = {
  /** @param {number} ts */
  tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
};
/** Revenue charts drawn at most; other currencies show in the totals and the CSV. */
const CHARTED_CURRENCIES = 8;
/** Whole units where the currency has no smaller one (Stars, yen): no tick at half a star. */
const WHOLE_INCRS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8,
  2e8, 5e8, 1e9, 2e9, 5e9, 1e10, 2e10, 5e10, 1e11, 2e11, 5e11, 1e12, 2e12, 5e12, 1e13, 2e13, 5e13, 1e14, 2e14, 5e14,
  1e15,
];
/** A day axis: ticks on whole days (or weeks, months), labelled as dates, never as times of day. */
const DAY_AXIS = {
  incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S, 91 * DAY_S],
  /** @param {unknown} _u @param {number[]} ticks */
  values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(5, 10)),
};

/**
 * A chart over the range's days, as wide as its section: every chart's day axis and scale, its own series and value
 * axis. @param {number[]} xs @param {object[]} series after the day's @param {(number | null)[][]} data after the
 * days @param {HTMLElement} target @param {number} height @param {object} [yAxis] @returns {Chart}
 */
function dayChart(xs, series, data, target, height, yAxis = {}) {
  return new uPlot(
    {
      ...UTC_DAYS,
      width: width(),
      height,
      series: [DAY_SERIES, ...series],
      axes: [DAY_AXIS, yAxis],
      scales: { x: DAY_SCALE },
    },
    [xs, ...data],
    target,
  );
}

/**
 * The charts on screen, destroyed before new ones are drawn.
 * @type {Chart[]}
 */
let charts = [];
/**
 * The range on screen, UTC dates.
 * @type {DayRange | null}
 */
let shown = null;

/** The range the reports show (null before the first load); the funnel asks over it. @returns {DayRange | null} */
export const shownRange = () => shown;

export function resetReports() {
  for (const c of charts) c.destroy();
  charts = [];
  shown = null;
  for (const id of ['report-events', 'report-users', 'report-revenue', 'report-sessions', 'report-session-lengths'])
    $(id).replaceChildren();
  $('campaigns-body').replaceChildren();
  $('retention-head').replaceChildren();
  $('retention-body').replaceChildren();
  $('reports-status').textContent = '';
  $('reports-empty').hidden = true;
  for (const id of ['report-events-total', 'report-users-total', 'report-revenue-total', 'report-sessions-total'])
    $(id).textContent = '';
}

/** @param {Date} d */
const isoDay = (d) => d.toISOString().slice(0, 10);

/** The last `days` days, today included (UTC). @param {number} days @returns {DayRange} */
function lastDays(days) {
  const to = new Date();
  const from = new Date(to.getTime() - (days - 1) * DAY_S * 1000);
  return { from: isoDay(from), to: isoDay(to) };
}

/** A slower answer for a range chosen earlier is not drawn over a later one; nor for a grouping of retention. */
const reportsRequest = latestOnly();
const retentionRequest = latestOnly();

/** @param {DayRange} [range] */
export async function loadReports(range = shown ?? lastDays(Number($('report-days').value) || 30)) {
  const projectId = state.projectId;
  const current = reportsRequest();
  const q = `from=${range.from}&to=${range.to}`;
  $('reports-status').textContent = 'Loading…';
  try {
    /** @type {[DailyRow[], RevenueLine[], CampaignRow[], SessionsRow[], RetentionRow[]]} */
    const [daily, revenue, campaigns, sessions, retention] = await Promise.all([
      api('GET', `/admin/projects/${projectId}/reports/daily?${q}`),
      api('GET', `/admin/projects/${projectId}/reports/revenue?${q}&by=day`),
      api('GET', `/admin/projects/${projectId}/reports/campaigns?${q}`),
      api('GET', `/admin/projects/${projectId}/reports/sessions?${q}`),
      api('GET', `/admin/projects/${projectId}/reports/retention?${q}&by=${retentionBy()}`),
    ]);
    if (projectId !== state.projectId || !current()) return;
    shown = range;
    draw(daily, revenue, campaigns);
    drawSessions(sessions);
    drawRetention(retention);
    $('reports-status').textContent = `${range.from} to ${range.to} (UTC), within seconds of the events.`;
  } catch (err) {
    if (isSignedOutError(err) || projectId !== state.projectId || !current()) return;
    $('reports-status').textContent = `The reports could not be loaded: ${describe(err)}`;
  }
}

/** Charts are as wide as their section, so no strip of it stays empty on a wide screen. */
function width() {
  return Math.max(280, $('reports').clientWidth);
}

/**
 * Bars per day stacked by band: each series is drawn as the running total up to it, the last band first, so each
 * shows as a band of its own; the legend shows the band's own count.
 * @param {number[]} xs
 * @param {{ label: string, color: string, values: number[] }[]} bands
 * @param {HTMLElement} target
 * @param {number} height
 * @param {object} [yAxis]
 * @returns {Chart}
 */
function stackedBars(xs, bands, target, height, yAxis = {}) {
  const stacked = bands.map((_, i) =>
    xs.map((_, k) => bands.slice(0, i + 1).reduce((n, b) => n + (b.values[k] ?? 0), 0)),
  );
  const order = bands.map((_, i) => bands.length - 1 - i);
  return dayChart(
    xs,
    order.map((i) => ({
      label: bands[i]?.label,
      stroke: bands[i]?.color,
      fill: bands[i]?.color,
      paths: uPlot.paths.bars({ size: [0.8, 40] }),
      points: { show: false },
      /** @param {{ data: (number | null)[][] }} u @param {unknown} _v @param {number} _si @param {number | null} k */
      value: (u, _v, _si, k) => fmt(bands[i]?.values[shownAt(u, k)] ?? 0),
    })),
    order.map((i) => stacked[i] ?? []),
    target,
    height,
    yAxis,
  );
}

/** @param {DailyRow[]} daily @param {RevenueLine[]} revenue @param {CampaignRow[]} campaigns */
function draw(daily, revenue, campaigns) {
  for (const c of charts) c.destroy();
  charts = [];
  const xs = daily.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);

  const present = TYPES.filter((t) => daily.some((d) => (d.eventsByType[t] ?? 0) > 0));
  charts.push(
    stackedBars(
      xs,
      present.map((t) => ({
        label: t,
        color: COLORS[TYPES.indexOf(t)] ?? '#6e7781',
        values: daily.map((d) => d.eventsByType[t] ?? 0),
      })),
      $('report-events'),
      220,
      { values: (/** @type {unknown} */ _u, /** @type {number[]} */ ticks) => ticks.map((t) => fmt(t)) },
    ),
  );
  const totalEvents = daily.reduce((n, d) => n + d.events, 0);
  $('report-events-total').textContent = `${fmt(totalEvents)} ${totalEvents === 1 ? 'event' : 'events'}`;
  $('report-events-total').setAttribute('data-value', String(totalEvents));
  // No events: what to send, not an empty grid.
  $('reports-empty').hidden = totalEvents > 0;

  charts.push(
    dayChart(
      xs,
      [
        { label: 'active users', stroke: '#1f6feb', width: 2, ...LINE_VALUE },
        { label: 'new users', stroke: '#2da44e', width: 2, ...LINE_VALUE },
      ],
      [daily.map((d) => d.activeUsers), daily.map((d) => d.newUsers)],
      $('report-users'),
      200,
    ),
  );
  const newUsers = daily.reduce((n, d) => n + d.newUsers, 0);
  $('report-users-total').textContent = `${fmt(newUsers)} new ${newUsers === 1 ? 'user' : 'users'}`;
  $('report-users-total').setAttribute('data-value', String(newUsers));

  // Net revenue per day: a chart per currency, its axis in that currency's units and labelled with it (cents and
  // stars on one unlabelled axis read as one figure).
  // The currencies paid in most; any three capital letters are a currency to the API, and each chart is a canvas.
  const charted = [...revenue].sort((a, b) => b.payments - a.payments).slice(0, CHARTED_CURRENCIES);
  const more = revenue.length - charted.length;
  $('report-revenue').replaceChildren(
    ...(revenue.length > 0
      ? charted.map(revenueChart(xs))
      : [el('p', { class: 'muted' }, 'No payments in this range.')]),
    ...(more > 0
      ? [
          el(
            'p',
            { class: 'muted', 'data-testid': 'report-revenue-more' },
            `${fmt(more)} more ${more === 1 ? 'currency' : 'currencies'}: totals above, days in the CSV.`,
          ),
        ]
      : []),
  );
  $('report-revenue-total').replaceChildren(
    ...revenue.map((r) =>
      el(
        'span',
        { class: 'pill', 'data-testid': 'report-revenue-net', 'data-currency': r.currency },
        `${r.currency} net ${formatMoney(r.netAmount, r.currency)}`,
      ),
    ),
  );

  $('campaigns-body').replaceChildren(
    ...campaigns.map((c) =>
      el(
        'tr',
        { 'data-testid': 'campaign-row', 'data-campaign': c.campaign ?? '' },
        el('td', { class: c.campaign === null ? 'muted' : 'mono' }, c.campaign ?? '(none)'),
        el('td', { class: 'num', 'data-testid': 'campaign-new' }, fmt(c.newUsers)),
        el('td', { class: 'num', 'data-testid': 'campaign-active' }, fmt(c.activeUsers)),
        el('td', { class: 'num', 'data-testid': 'campaign-payers' }, fmt(c.payers)),
        el('td', { class: 'num' }, c.revenue.map((v) => formatMoney(v.netAmount, v.currency)).join(', ') || '–'),
      ),
    ),
  );
  $('campaigns-empty').hidden = campaigns.length > 0;
}

/**
 * A currency's net revenue per day as a line in its units; the chart's label names the axis's first and last marks,
 * which are drawn on the canvas. @param {number[]} xs @returns {(r: RevenueLine, i: number) => HTMLElement}
 */
const revenueChart = (xs) => (r, i) => {
  const digits = fractionDigits(r.currency);
  const box = el('div', { role: 'img', 'data-testid': 'report-revenue-chart', 'data-currency': r.currency });
  const axisWidth = (/** @type {string[] | null} */ labels) =>
    labels ? 24 + 7 * Math.max(4, ...labels.map((l) => l.length)) : 60;
  charts.push(
    dayChart(
      xs,
      [
        {
          label: r.currency,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          /** @param {{ data: (number | null)[][] }} u @param {unknown} _v @param {number} _si @param {number | null} k */
          value: (u, _v, _si, k) => formatMoney(r.days[shownAt(u, k)]?.netAmount ?? 0, r.currency),
        },
      ],
      [r.days.map((d) => Number(d.netAmount) / 10 ** (digits ?? 0))],
      box,
      160,
      {
        label: r.currency,
        size: (/** @type {unknown} */ _u, /** @type {string[] | null} */ labels) => axisWidth(labels),
        ...(digits === null || digits === 0 ? { incrs: WHOLE_INCRS } : {}),
        /** @param {unknown} _u @param {number[]} ticks */
        values: (_u, ticks) => {
          const labels = ticks.map((t) => formatUnits(t, r.currency));
          // The marks are drawn on the canvas: the chart's accessible name says where they run, and only the axis
          // knows them.
          box.setAttribute(
            'aria-label',
            `Net revenue per day in ${r.currency}, its axis marked from ${labels[0] ?? ''} to ${labels.at(-1) ?? ''}`,
          );
          return labels;
        },
      },
    ),
  );
  return box;
};

/** Sessions per day stacked by platform, and their median and 90th-percentile lengths. @param {SessionsRow[]} rows */
function drawSessions(rows) {
  for (const id of ['report-sessions', 'report-session-lengths']) $(id).replaceChildren();
  const xs = rows.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
  const total = rows.reduce((n, d) => n + d.sessions, 0);
  $('report-sessions-total').textContent = `${fmt(total)} ${total === 1 ? 'session' : 'sessions'}`;
  $('report-sessions-total').setAttribute('data-value', String(total));
  if (total === 0) {
    $('report-sessions').replaceChildren(el('p', { class: 'muted' }, 'No mini-app sessions in this range.'));
    return;
  }
  const platforms = [...new Set(rows.flatMap((d) => Object.keys(d.byPlatform)))].sort();
  charts.push(
    stackedBars(
      xs,
      platforms.map((p, i) => ({
        label: p || '(none)',
        color: COLORS[i % COLORS.length] ?? '#6e7781',
        values: rows.map((d) => d.byPlatform[p] ?? 0),
      })),
      $('report-sessions'),
      200,
    ),
  );
  charts.push(
    dayChart(
      xs,
      [
        { label: 'median length, s', stroke: '#1f6feb', width: 2, ...LINE_VALUE },
        { label: '90th percentile, s', stroke: '#8250df', width: 2, ...LINE_VALUE },
      ],
      [rows.map((d) => d.medianDurationS), rows.map((d) => d.p90DurationS)],
      $('report-session-lengths'),
      160,
    ),
  );
}

/** @returns {'day' | 'week'} */
const retentionBy = () => ($('retention-by').value === 'day' ? 'day' : 'week');

/**
 * The cohorts as a table: users, then the share of them active k days (weeks) on, on a heat scale (the count in the
 * cell's title). @param {RetentionRow[]} rows
 */
function drawRetention(rows) {
  const columns = rows[0]?.retained.length ?? 0;
  const unit = retentionBy() === 'day' ? 'Day' : 'Week';
  $('retention-head').replaceChildren(
    el(
      'tr',
      {},
      el('th', { scope: 'col' }, 'Cohort'),
      el('th', { scope: 'col', class: 'num' }, 'Users'),
      ...Array.from({ length: columns }, (_, k) => el('th', { scope: 'col', class: 'num' }, `${unit} ${k}`)),
    ),
  );
  $('retention-body').replaceChildren(
    ...rows.map((r) =>
      el(
        'tr',
        { 'data-testid': 'retention-row', 'data-cohort': r.cohort },
        el('td', {}, r.cohort),
        el('td', { class: 'num' }, fmt(r.users)),
        ...r.retained.map((n) => {
          const share = r.users > 0 ? n / r.users : 0;
          const cell = el(
            'td',
            {
              class: share > 0.5 ? 'heat high' : 'heat',
              title: `${fmt(n)} of ${fmt(r.users)}`,
              'data-testid': 'retention-cell',
            },
            r.users > 0 ? `${(share * 100).toFixed(share > 0 && share < 0.1 ? 1 : 0)}%` : '',
          );
          cell.style.setProperty('--share', String(share));
          return cell;
        }),
      ),
    ),
  );
  $('retention-empty').hidden = rows.some((r) => r.users > 0);
}

/** A report's CSV, fetched with the admin token (a plain link cannot carry it), saved under the server's name. @param {string} report */
async function download(report) {
  if (shown === null) return;
  const extra = report === 'revenue' ? '&by=day' : report === 'retention' ? `&by=${retentionBy()}` : '';
  const res = await fetch(
    `/admin/projects/${state.projectId}/reports/${report}?from=${shown.from}&to=${shown.to}${extra}&format=csv`,
    {
      headers: { authorization: `Bearer ${sessionStorage.getItem(STORAGE_KEY) ?? ''}` },
    },
  );
  if (!res.ok) throw new ApiError(res.status, 'csv', `The CSV could not be made (${res.status}).`);
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `${report}.csv`;
  const url = URL.createObjectURL(await res.blob());
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Attaches the range and download controls, and follows the section's width. */
export function startReports() {
  onSignOut(() => resetReports());
  // Charts follow the width of their section (a turned phone, a resized window).
  new ResizeObserver(() => {
    for (const c of charts) c.setSize({ width: width(), height: c.height });
  }).observe($('reports'));
  // Another grouping: the retention table alone is asked for again.
  $('retention-by').addEventListener('change', () => {
    const projectId = state.projectId;
    const range = shown;
    if (range === null) return;
    const current = retentionRequest();
    api('GET', `/admin/projects/${projectId}/reports/retention?from=${range.from}&to=${range.to}&by=${retentionBy()}`)
      .then((/** @type {RetentionRow[]} */ rows) => {
        if (projectId === state.projectId && current()) drawRetention(rows);
      })
      .catch((err) => {
        if (!isSignedOutError(err))
          $('reports-status').textContent = `The reports could not be loaded: ${describe(err)}`;
      });
  });
  for (const report of ['daily', 'revenue', 'campaigns', 'sessions', 'retention'])
    $(`report-csv-${report}`).addEventListener('click', () =>
      download(report).catch((err) => {
        $('reports-status').textContent = describe(err);
      }),
    );

  $('report-days').addEventListener('change', () => {
    const days = Number($('report-days').value);
    $('report-custom').hidden = days !== 0;
    if (days > 0) loadReports(lastDays(days));
  });

  $('report-custom').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ (e) => {
      e.preventDefault();
      const from = $('report-from').value;
      const to = $('report-to').value;
      if (from === '' || to === '') {
        $('reports-status').textContent = 'Choose both days.';
        return;
      }
      loadReports({ from, to });
    },
  );
}
