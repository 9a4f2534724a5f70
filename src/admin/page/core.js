// @ts-check
// The admin page's base: its constants, its one state, the shapes the admin API answers with, and the helpers that
// build DOM. Every other module imports it; it imports nothing. Data reaches the DOM through textContent and
// setAttribute only, never as markup.

/**
 * @typedef {{ projectId: string, name: string, eventAllowance: number | null, trackingPlanVersion?: number | null }} Project
 * @typedef {{ botId: string, projectId: string | null, name: string | null, messengerBotId: number | string | null,
 *   miniAppIngest: boolean, apiIngest: boolean }} Bot
 * @typedef {{ tokenId: string, hint: string, createdAt: string, lastUsedAt: string | null, revokedAt: string | null,
 *   rateLimitPerMin: number | null, rateLimitBurst: number | null }} TokenSummary
 * @typedef {{ month: string, eventsBilled: number, eventsStored: number, eventAllowance: number | null }} Usage
 * @typedef {{ code: string, severity: string, message?: string, path?: string }} Diagnostic
 * @typedef {{ id: number, eventId: string | null, receivedAt: string, channel: string, botId: string,
 *   userId: string | null, truncated: boolean, event: unknown, diagnostics: Diagnostic[] }} QuarantineItem
 * @typedef {{ code: string, count: number }} QuarantineCount
 * @typedef {{ replayed: number, accepted: number, stillRejected: number, duplicated: number }} ReplayResult
 * @typedef {{ body: { ids?: number[], code?: string }, text: string, label: string }} ReplayScope
 * @typedef {{ projectId: string, scope: ReplayScope, result: ReplayResult }} ReplayPreview
 * @typedef {{ code: string | null, summary: QuarantineCount[], items: QuarantineItem[], next: number | null,
 *   loaded: boolean, selected: Set<number>, detailId: number | null, preview: ReplayPreview | null,
 *   gen: number }} QuarantineView
 * @typedef {{ version: number, updatedAt: string, mode: string, unplannedEvents: string,
 *   events: Record<string, unknown> }} StoredPlan
 * @typedef {{ [key: string]: unknown, type?: string, skipped?: number, status?: string, eventId?: string,
 *   eventName?: string, eventType?: string, channel?: string, receivedAt?: string, diagnostics?: unknown,
 *   perSecond?: number }} LiveMessage
 * @typedef {{ ws: WebSocket | null, paused: boolean, held: LiveMessage[], heldCount: number, skipped: number,
 *   hiddenTimer: ReturnType<typeof setTimeout> | null }} WatchView
 */

export const STORAGE_KEY = 'tg-ingest.adminToken';
/** The project this tab had open last, so a reload or a new sign-in comes back to it. */
export const PROJECT_KEY = 'tg-ingest.projectId';
export const LIVE_MS = 3000;
/** The revenue report reads every payment of the project, so it comes every SLOW_EVERY rounds only. */
export const SLOW_EVERY = 10;
const SVG_NS = 'http://www.w3.org/2000/svg';
export const MESSENGER_ID = /^[1-9][0-9]{0,18}$/;

/**
 * For a view fed by requests that can overlap: each call marks a new request and returns whether it is still the
 * latest when its answer comes. An older answer (given before a change made meanwhile) is then not drawn over a newer.
 * @returns {() => () => boolean}
 */
export function latestOnly() {
  let latest = 0;
  return () => {
    const mine = ++latest;
    return () => mine === latest;
  };
}

/** An empty quarantine view of generation `gen`. @param {number} gen @returns {QuarantineView} */
export const emptyQuarantine = (gen) => ({
  code: null,
  summary: [],
  items: [],
  next: null,
  loaded: false,
  selected: new Set(),
  detailId: null,
  preview: null,
  gen,
});

/** Views told when the quarantine may have changed behind them. */
const quarantineWatchers = /** @type {(() => void)[]} */ ([]);
/** @param {() => void} fn */
export const onQuarantineChange = (fn) => void quarantineWatchers.push(fn);
/** The quarantine may hold more than the page shows. */
export const quarantineChanged = () => {
  for (const fn of quarantineWatchers) fn();
};

/** @returns {WatchView} */
export const emptyWatch = () => ({ ws: null, paused: false, held: [], heldCount: 0, skipped: 0, hiddenTimer: null });

/**
 * @type {{ projects: Project[], projectId: string | null, bots: Bot[], dialogBot: Bot | null,
 *   timer: ReturnType<typeof setTimeout> | undefined, ticks: number, loop: number, plan: StoredPlan | null,
 *   planText: string, q: QuarantineView, watch: WatchView }}
 */
export const state = {
  projects: [],
  projectId: null,
  bots: [],
  /** The bot whose token dialog is open. */
  dialogBot: null,
  /** The refresh loop: its pending timeout, its round count, and its generation (see stopLive). */
  timer: undefined,
  ticks: 0,
  loop: 0,
  /** The stored tracking plan (null: none) and the editor text it was shown as, to tell unsaved edits. */
  plan: null,
  planText: '',
  /** The quarantine view; see resetQuarantine. */
  q: emptyQuarantine(0),
  /** The live event stream; see resetWatch. */
  watch: emptyWatch(),
};

/**
 * An element of index.html by id. Typed loosely on purpose: the ids are the page's own, each
 * names one kind of element (an input, a dialog, a table body), and the tests drive them all.
 * @param {string} id
 * @returns {any}
 */
export const $ = (id) => document.getElementById(id);

/**
 * el('td', {class: 'x', 'data-testid': 'y'}, 'text', child) — strings become text nodes.
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined>} attrs
 * @param {(Node | string | number | null | undefined)[]} children
 * @returns {any} the element (typed loosely, as `$`: its kind follows `tag`)
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs))
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  for (const c of children)
    if (c !== null && c !== undefined) node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return node;
}

/** @param {string} tag @param {Record<string, string | number>} attrs @returns {SVGElement} */
export function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** @param {unknown} n */
export const fmt = (n) => (typeof n === 'number' ? n.toLocaleString() : String(n));
/**
 * Every time on the page in one form: UTC, as the reports' days are, and labelled so (a browser's locale and zone
 * would show the same moment three ways). `part` picks the whole time, the clock alone, or bare hours and minutes
 * (a chart's axis, labelled UTC where it ends).
 * @param {string} iso @param {'full' | 'clock' | 'hhmm'} [part]
 */
export function fmtTime(iso, part = 'full') {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return String(iso);
  const s = t.toISOString();
  if (part === 'hhmm') return s.slice(11, 16);
  return `${part === 'clock' ? s.slice(11, 19) : `${s.slice(0, 10)} ${s.slice(11, 19)}`} UTC`;
}
/** @param {string} iso @param {'full' | 'clock'} [part] @returns {HTMLTimeElement} */
export const timeEl = (iso, part = 'full') => el('time', { datetime: iso }, fmtTime(iso, part));
/** @param {Bot} b */
export const botLabel = (b) => b.name || 'Unnamed bot';
