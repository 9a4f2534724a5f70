// @ts-check
// The admin page: the counts and usage card refreshed every few seconds, and revenue.
import { $, el, fmt, fmtTime, hhmm, LIVE_MS, SLOW_EVERY, state, svg } from './core.js';
import { api, ApiError, busy, describe, flash, isSignedOutError } from './api.js';
import { loadUsage, renderUsage, usageRequest } from './projects.js';

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
  state.timer = null;
  state.loop++;
}

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
  if (stats.status === 'fulfilled') renderStats(stats.value);
  // A change saved meanwhile (an allowance, a replay) asked again: this answer would put back the old numbers.
  if (usage.status === 'fulfilled' && usageCurrent()) renderUsage(usage.value);
  const failed = [stats, usage].find((r) => r.status === 'rejected');
  if (failed && isSignedOutError(failed.reason)) return;
  $('live-updated').textContent = failed
    ? `Not updated: ${describe(failed.reason)}`
    : `Updated ${new Date().toLocaleTimeString()}`;
  // A project that is gone will not come back: asking every 3 s would only repeat the 404.
  if (failed && failed.reason instanceof ApiError && failed.reason.status === 404) return;
  state.timer = setTimeout(() => tick(loop), LIVE_MS);
}

// A hidden tab asks nothing; on its return the loop starts over at once (revenue included).
document.addEventListener('visibilitychange', () => {
  if (document.hidden) stopLive();
  else if (state.projectId !== null) startLive();
});

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

function setStat(key, value) {
  const dd = /** @type {HTMLElement} */ (document.querySelector(`[data-testid="stat-${key}"]`));
  dd.dataset.value = String(value);
  dd.textContent = fmt(value);
}

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

/** Rounds a chart's top up to 1, 2 or 5 × 10^n so the scale does not jitter with every minute. */
function niceCeil(n) {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

const SERIES = ['accepted', 'rejected', 'duplicated'];

function renderChart(minutes) {
  const W = 600,
    H = 140;
  const slot = W / Math.max(minutes.length, 1);
  const peak = minutes.reduce((m, x) => Math.max(m, x.accepted + x.rejected + x.duplicated), 0);
  const max = niceCeil(peak);
  const scale = H / max;
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
    title.textContent = `${hhmm(m.minute)}: ${m.accepted} accepted, ${m.rejected} rejected, ${m.duplicated} duplicated, ${m.storedNotBilled} stored not billed`;
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
  $('chart-start').textContent = minutes.length > 0 ? hhmm(minutes[0].minute) : '';
  $('chart-end').textContent = minutes.length > 0 ? `${hhmm(minutes[minutes.length - 1].minute)} (now)` : '';
}

/** The messenger's Stars: not an ISO 4217 code, and counted in whole stars. */
const STARS = 'XTR';
/** Codes Intl has data for; it would otherwise format any well-formed code with 2 made-up decimals. */
const KNOWN_CURRENCIES =
  typeof Intl.supportedValuesOf === 'function' ? new Set(Intl.supportedValuesOf('currency')) : null;

/**
 * A total in the currency's smallest units (a number, or a decimal string beyond 2^53) as money:
 * 1999 USD is $19.99. The split into units and fraction is BigInt arithmetic, so a string loses no
 * digit; Intl only lays the parts out. Stars, unknown and invalid codes read "1,999 XTR".
 */
export function formatMoney(amount, currency) {
  const valid =
    typeof amount === 'number' ? Number.isSafeInteger(amount) : typeof amount === 'string' && /^-?[0-9]+$/.test(amount);
  if (!valid) return `${String(amount)} ${currency}`;
  const minor = BigInt(amount);
  const code = String(currency).toUpperCase();
  const plain = () => `${new Intl.NumberFormat().format(minor)} ${currency}`;
  if (code === STARS || (KNOWN_CURRENCIES !== null && !KNOWN_CURRENCIES.has(code))) return plain();
  let nf, digits;
  try {
    nf = new Intl.NumberFormat(undefined, { style: 'currency', currency: code });
    digits = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits;
  } catch {
    return plain(); // a malformed code is a RangeError
  }
  const scale = 10n ** BigInt(digits);
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const units = abs / scale;
  const fraction = (abs % scale).toString().padStart(digits, '0');
  // Intl formats the whole units exactly (BigInt at any size, -0 keeps the sign of -$0.05); the
  // fraction it would print (always zeros) is replaced by the real digits, in the locale's numerals.
  const digit = new Intl.NumberFormat(undefined, { useGrouping: false });
  return nf
    .formatToParts(negative ? (units === 0n ? -0 : -units) : units)
    .map((part) => (part.type === 'fraction' ? [...fraction].map((d) => digit.format(Number(d))).join('') : part.value))
    .join('');
}

async function loadRevenue() {
  const projectId = state.projectId;
  try {
    const rows = await api('GET', `/admin/projects/${projectId}/reports/revenue`);
    if (projectId !== state.projectId) return;
    $('revenue-body').replaceChildren(
      ...rows.map((r) =>
        el(
          'tr',
          { 'data-testid': 'revenue-row', 'data-currency': r.currency },
          el('td', { class: 'mono' }, r.currency),
          el('td', { class: 'num', 'data-testid': 'revenue-total' }, formatMoney(r.totalAmount, r.currency)),
        ),
      ),
    );
    $('revenue-empty').hidden = rows.length > 0;
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Revenue: ${describe(err)}`, 'error');
  }
}

$('revenue-refresh').addEventListener('click', (e) =>
  busy(e.currentTarget, () => Promise.all([loadRevenue(), loadUsage()])),
);
