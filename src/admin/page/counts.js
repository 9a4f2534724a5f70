// @ts-check
// The admin page: the counts and usage card refreshed every few seconds, and revenue.
import { $, el, fmt, fmtTime, LIVE_MS, quarantineChanged, SLOW_EVERY, state, svg } from './core.js';
import { api, ApiError, busy, describe, flash, isSignedOutError, onSignOut } from './api.js';
import { formatMoney } from './format.js';
import { loadUsage, renderUsage, usageRequest } from './usage.js';

/**
 * @typedef {{ minute: string, accepted: number, rejected: number, duplicated: number, storedNotBilled: number }} Minute
 * @typedef {{ since: string, totals: Record<string, number>, minutes: Minute[],
 *   topDiagnostics: { code: string, count: number }[] }} ProjectStats
 */

// One loop feeds the live view and the usage card together, so the two never tell different
// moments. A round is scheduled only once the previous one has answered: a slow service gets no
// pile of requests, and there is no second timer to drift.
export function startLive() {
  stopLive();
  state.ticks = 0;
  if (!document.hidden && state.projectId !== null) tick(state.loop);
}

/** Bumping the generation also ends a round still waiting for its answers: it schedules no next one. */
export function stopLive() {
  clearTimeout(state.timer);
  state.timer = undefined;
  state.loop++;
}

/**
 * The rejected total each instance last gave, by project and instance start (the most recent 16).
 * @type {Map<string, number>}
 */
const seenRejected = new Map();

/** @param {number} loop */
async function tick(loop) {
  const projectId = state.projectId;
  const slow = state.ticks++ % SLOW_EVERY === 0;
  const usageCurrent = usageRequest();
  const [stats, usage] = await Promise.allSettled([
    api('GET', `/admin/projects/${projectId}/stats`),
    api('GET', `/admin/projects/${projectId}/usage`),
    slow ? loadRevenue() : undefined,
  ]);
  if (loop !== state.loop) return;
  if (stats.status === 'fulfilled') {
    const s = /** @type {ProjectStats} */ (stats.value);
    // More rejects on this instance than it last said, or a slow round (another instance's): the quarantine follows
    // without a click. Totals are per instance (since it started), and behind a balancer answers alternate.
    const instance = `${projectId} ${s.since}`;
    const rejected = s.totals.rejected ?? 0;
    const before = seenRejected.get(instance);
    if (before !== undefined && (rejected > before || slow)) quarantineChanged();
    seenRejected.delete(instance);
    seenRejected.set(instance, rejected);
    if (seenRejected.size > 16) seenRejected.delete(seenRejected.keys().next().value ?? '');
    renderStats(s);
  }
  // A change saved meanwhile (an allowance, a replay) asked again: this answer would put back the old numbers.
  if (usage.status === 'fulfilled' && usageCurrent()) renderUsage(usage.value);
  const failed = [stats, usage].find((r) => r.status === 'rejected');
  if (failed && isSignedOutError(failed.reason)) return;
  $('live-updated').textContent = failed
    ? `Not updated: ${describe(failed.reason)}`
    : `Updated ${fmtTime(new Date().toISOString(), 'clock')}`;
  // A project that is gone will not come back: asking every 3 s would only repeat the 404.
  if (failed && failed.reason instanceof ApiError && failed.reason.status === 404) return;
  state.timer = setTimeout(() => tick(loop), LIVE_MS);
}

const STAT_KEYS = ['accepted', 'rejected', 'duplicated', 'storedNotBilled', 'redelivered'];

export function resetLive() {
  for (const k of STAT_KEYS) setStat(k, 0);
  $('chart').replaceChildren();
  for (const id of ['chart-max', 'chart-start', 'chart-end']) $(id).textContent = '';
  $('top-diagnostics').replaceChildren();
  $('top-diagnostics-empty').hidden = false;
  $('live-updated').textContent = '';
  $('live-since').textContent = '';
  $('revenue-body').replaceChildren();
  $('revenue-empty').hidden = false;
  for (const id of ['usage-month', 'usage-billed', 'usage-stored', 'usage-allowance']) {
    const dd = $('usage').querySelector(`[data-testid="${id}"]`);
    dd.textContent = '–';
    delete dd.dataset.value;
  }
}

/** @param {string} key @param {number} value */
function setStat(key, value) {
  const dd = /** @type {HTMLElement} */ (document.querySelector(`[data-testid="stat-${key}"]`));
  dd.dataset.value = String(value);
  dd.textContent = fmt(value);
}

/** @param {ProjectStats} s */
function renderStats(s) {
  for (const k of STAT_KEYS) setStat(k, s.totals[k] ?? 0);
  $('live-since').textContent = `Totals since this instance started, ${fmtTime(s.since)}.`;
  renderChart(s.minutes);
  const diags = $('top-diagnostics');
  diags.replaceChildren(
    ...s.topDiagnostics.map((d) =>
      el('li', { 'data-code': d.code }, el('code', {}, d.code), ' ', el('span', { class: 'count' }, fmt(d.count))),
    ),
  );
  $('top-diagnostics-empty').hidden = s.topDiagnostics.length > 0;
}

/** Rounds a chart's top up to 1, 2 or 5 × 10^n so the scale does not jitter with every minute. @param {number} n */
function niceCeil(n) {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

/** @type {('accepted' | 'rejected' | 'duplicated')[]} */
const SERIES = ['accepted', 'rejected', 'duplicated'];

/** @param {Minute[]} minutes */
function renderChart(minutes) {
  const W = 600,
    H = 140;
  const slot = W / Math.max(minutes.length, 1);
  const peak = minutes.reduce((m, x) => Math.max(m, x.accepted + x.rejected + x.duplicated), 0);
  const max = niceCeil(peak);
  const scale = H / max;
  /** @param {'accepted' | 'rejected' | 'duplicated'} k */
  const sum = (k) => minutes.reduce((a, x) => a + x[k], 0);

  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart-svg', preserveAspectRatio: 'none' });
  root.setAttribute(
    'aria-label',
    `Events per minute over the last ${minutes.length} minutes: ${sum('accepted')} accepted, ${sum('rejected')} rejected, ${sum('duplicated')} duplicated; peak ${peak} per minute.`,
  );
  root.append(
    svg('line', { x1: 0, x2: W, y1: 0.5, y2: 0.5, class: 'grid' }),
    svg('line', { x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5, class: 'axis' }),
  );

  minutes.forEach((m, i) => {
    const g = svg('g', { class: 'bar' });
    const title = svg('title');
    title.textContent = `${fmtTime(m.minute, 'hhmm')} UTC: ${m.accepted} accepted, ${m.rejected} rejected, ${m.duplicated} duplicated, ${m.storedNotBilled} stored not billed`;
    // A full-height transparent hit area, so even an empty minute shows its tooltip.
    g.append(title, svg('rect', { x: i * slot, y: 0, width: slot, height: H, class: 'hit' }));
    let y = H;
    for (const k of SERIES) {
      if (m[k] === 0) continue;
      const h = Math.max(m[k] * scale, 1);
      y -= h;
      g.append(svg('rect', { x: i * slot + 1, y, width: Math.max(slot - 2, 1), height: h, class: `s-${k}` }));
    }
    root.append(g);
  });
  $('chart').replaceChildren(root);
  $('chart-max').textContent = `${fmt(max)} / min`;
  const first = minutes[0];
  const last = minutes[minutes.length - 1];
  $('chart-start').textContent = first !== undefined ? fmtTime(first.minute, 'hhmm') : '';
  $('chart-end').textContent = last !== undefined ? `${fmtTime(last.minute, 'hhmm')} UTC (now)` : '';
}

async function loadRevenue() {
  const projectId = state.projectId;
  try {
    /** @type {{ currency: string, totalAmount: unknown, refundedAmount: unknown, netAmount: unknown }[]} */
    const rows = await api('GET', `/admin/projects/${projectId}/reports/revenue`);
    if (projectId !== state.projectId) return;
    // Net first, as the reports view shows it; what was paid and refunded beside it.
    $('revenue-body').replaceChildren(
      ...rows.map((r) =>
        el(
          'tr',
          { 'data-testid': 'revenue-row', 'data-currency': r.currency },
          el('td', { class: 'mono' }, r.currency),
          el('td', { class: 'num', 'data-testid': 'revenue-net' }, formatMoney(r.netAmount, r.currency)),
          el('td', { class: 'num muted', 'data-testid': 'revenue-total' }, formatMoney(r.totalAmount, r.currency)),
          el(
            'td',
            { class: 'num muted', 'data-testid': 'revenue-refunded' },
            formatMoney(r.refundedAmount, r.currency),
          ),
        ),
      ),
    );
    $('revenue-empty').hidden = rows.length > 0;
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Revenue: ${describe(err)}`, 'error');
  }
}

/** Attaches the revenue's refresh and the tab's visibility; a sign-out ends the loop. */
export function startCounts() {
  onSignOut(() => stopLive());
  // A hidden tab asks nothing; on its return the loop starts over at once (revenue included).
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) stopLive();
    else if (state.projectId !== null) startLive();
  });
  $('revenue-refresh').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) =>
      busy(/** @type {HTMLButtonElement} */ (e.currentTarget), () => Promise.all([loadRevenue(), loadUsage()])),
  );
}
