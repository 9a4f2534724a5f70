// @ts-check
// The admin page: plain DOM, fed only by the admin API. Data reaches the DOM through textContent
// and setAttribute only, never as markup.

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
 */
export function latestOnly() {
  let latest = 0;
  return () => {
    const mine = ++latest;
    return () => mine === latest;
  };
}

export const state = {
  projects: [],
  projectId: null,
  bots: [],
  /** The bot whose token dialog is open. */
  dialogBot: null,
  /** The refresh loop: its pending timeout, its round count, and its generation (see stopLive). */
  timer: null,
  ticks: 0,
  loop: 0,
  /** The stored tracking plan (null: none) and the editor text it was shown as, to tell unsaved edits. */
  plan: null,
  planText: '',
  /** The quarantine view; see resetQuarantine. */
  q: null,
  /** The live event stream; see resetWatch. */
  watch: null,
};

/**
 * An element of index.html by id. Typed loosely on purpose: the ids are the page's own, each
 * names one kind of element (an input, a dialog, a table body), and the tests drive them all.
 * @param {string} id
 * @returns {any}
 */
export const $ = (id) => document.getElementById(id);

/** el('td', {class: 'x', 'data-testid': 'y'}, 'text', child) — strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs))
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  for (const c of children)
    if (c !== null && c !== undefined) node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return node;
}

export function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

export const fmt = (n) => (typeof n === 'number' ? n.toLocaleString() : String(n));
export const fmtTime = (iso) => new Date(iso).toLocaleString();
export const timeEl = (iso) => el('time', { datetime: iso }, fmtTime(iso));
export const hhmm = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
