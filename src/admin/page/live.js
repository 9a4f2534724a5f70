// @ts-check
// The admin page: the live view, a WebSocket per viewer opened on request.
import { $, el, emptyWatch, fmt, state, STORAGE_KEY, timeEl } from './core.js';
import { onSignOut, signOut } from './api.js';
import { codeList, codesOf } from './format.js';

/**
 * @typedef {import('./core.js').LiveMessage} LiveMessage
 * @typedef {import('./core.js').WatchView} WatchView
 */

/** Rows the table keeps (older ones drop off the bottom), and the most held back while paused. */
const WATCH_MAX_ROWS = 500;
/** A tab hidden this long closes its stream: nobody reads it, and the service describes events for it. */
const WATCH_HIDDEN_MS = 60_000;

export function resetWatch() {
  closeWatch();
  state.watch = emptyWatch();
  $('watch-body').replaceChildren();
  $('watch-filter').value = '';
  renderWatchToggle();
  renderWatchCounts();
  watchStatus('Not watching.');
}

/** @param {string} text */
function watchStatus(text) {
  $('watch-status').textContent = text;
}

/** Same origin, so the page's connect-src 'self' covers it. @param {string} projectId */
function watchUrl(projectId) {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/admin/live?projectId=${encodeURIComponent(projectId)}`;
}

function openWatch() {
  const w = state.watch;
  closeWatch();
  const projectId = state.projectId;
  const token = sessionStorage.getItem(STORAGE_KEY);
  /** @type {WebSocket | null} */
  let ws = null;
  try {
    if (projectId !== null && token !== null) ws = new WebSocket(watchUrl(projectId));
  } catch (err) {
    watchStatus(`The live view could not be opened: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (ws === null) {
    // The switch follows the stream, which did not open.
    renderWatchToggle();
    return;
  }
  w.ws = ws;
  renderWatchToggle();
  watchStatus('Connecting…');
  // The token goes in the first message, never in the URL, which proxies and logs keep.
  const open = ws;
  ws.addEventListener('open', () => open.send(JSON.stringify({ token })));
  ws.addEventListener('message', (e) => {
    if (w === state.watch && w.ws === ws && typeof e.data === 'string') onWatchMessage(w, e.data);
  });
  ws.addEventListener('close', (e) => {
    // Closed on purpose: closeWatch has already said why.
    if (w !== state.watch || w.ws !== ws) return;
    w.ws = null;
    renderWatchToggle();
    // As a 401 does for the API: the admin token was changed.
    if (e.code === 4001) signOut('The admin token is no longer accepted. Sign in again.');
    else watchStatus(closeReason(e.code));
  });
}

/** @param {number} code */
function closeReason(code) {
  if (code === 4029)
    return 'Refused: too many failed sign-ins from this address. Wait a while, then turn “Watch live” on again.';
  if (code === 1001)
    return 'The service closed the stream (it may be restarting). Turn “Watch live” on again to reconnect.';
  return `The stream closed (code ${code}). Turn “Watch live” on again to reconnect.`;
}

/**
 * Ends the stream on purpose (switch off, another project, sign-out, a long-hidden tab); the table stays.
 * @param {string} [status]
 */
function closeWatch(status) {
  const w = state.watch;
  if (w.hiddenTimer !== null) clearTimeout(w.hiddenTimer);
  w.hiddenTimer = null;
  const ws = w.ws;
  w.ws = null;
  if (ws !== null) ws.close(1000);
  renderWatchToggle();
  if (status !== undefined) watchStatus(status);
}

function renderWatchToggle() {
  const w = state.watch;
  $('watch-toggle').checked = w.ws !== null;
  renderWatchPause();
}

/** @param {WatchView} w @param {string} data */
function onWatchMessage(w, data) {
  /** @type {LiveMessage} */
  let m;
  try {
    m = JSON.parse(data);
  } catch {
    return;
  }
  if (m === null || typeof m !== 'object') return;
  if (m.type === 'ready') {
    watchStatus(
      `Watching: each event of this project as this instance answers it, at most ${fmt(m.perSecond)} a second.`,
    );
    return;
  }
  if (typeof m.skipped === 'number' && m.skipped > 0) w.skipped += m.skipped;
  if (w.paused) {
    w.held.push(m);
    if (w.held.length > WATCH_MAX_ROWS) w.held.shift();
    w.heldCount++;
    renderWatchPause();
    renderWatchCounts();
  } else addWatchRows([m]);
}

const watchFilter = () => $('watch-filter').value.trim().toLowerCase();
/** @param {HTMLElement} row @param {string} f */
const watchMatches = (row, f) => f === '' || (row.dataset.match ?? '').includes(f);

/** `messages` oldest first; the newest ends on top. @param {LiveMessage[]} messages */
function addWatchRows(messages) {
  const body = $('watch-body');
  const f = watchFilter();
  const rows = messages.map((m) => {
    const row = watchRow(m);
    row.hidden = !watchMatches(row, f);
    return row;
  });
  body.prepend(...rows.reverse());
  while (body.rows.length > WATCH_MAX_ROWS) body.lastElementChild.remove();
  renderWatchCounts();
}

const WATCH_STATUSES = new Set(['accepted', 'rejected', 'duplicated']);

/** @param {LiveMessage} m */
function watchRow(m) {
  const status = typeof m.status === 'string' && WATCH_STATUSES.has(m.status) ? m.status : 'unknown';
  const name = typeof m.eventName === 'string' ? m.eventName : null;
  /** @param {unknown} v */
  const text = (v) => (typeof v === 'string' ? v : el('span', { class: 'muted' }, '—'));
  const row = el(
    'tr',
    {
      'data-testid': 'watch-row',
      'data-status': status,
      'data-event-id': typeof m.eventId === 'string' ? m.eventId : undefined,
    },
    el('td', { 'data-label': 'Time' }, typeof m.receivedAt === 'string' ? timeEl(m.receivedAt, 'clock') : text(null)),
    el('td', { 'data-label': 'Status' }, el('span', { class: `badge st-${status}` }, status)),
    el('td', { 'data-label': 'Event', 'data-testid': 'watch-name' }, text(name)),
    el('td', { 'data-label': 'Type' }, text(m.eventType)),
    el('td', { 'data-label': 'Channel' }, text(m.channel)),
    el('td', { 'data-label': 'Diagnostics', 'data-testid': 'watch-codes' }, codeList(m.diagnostics)),
  );
  // What the filter looks at: the name and each code, lower case, one a line (so no match spans two).
  row.dataset.match = [name ?? '', ...codesOf(m.diagnostics).map((c) => c.code)].join('\n').toLowerCase();
  return row;
}

function renderWatchCounts() {
  const w = state.watch;
  /** @type {HTMLTableRowElement[]} */
  const rows = [...$('watch-body').rows];
  const f = watchFilter();
  const shown = $('watch-shown');
  const visible = f === '' ? rows.length : rows.filter((r) => !r.hidden).length;
  shown.dataset.total = String(rows.length);
  shown.dataset.visible = String(visible);
  shown.textContent =
    rows.length === 0
      ? ''
      : f === ''
        ? `${fmt(rows.length)} in the table (the newest ${WATCH_MAX_ROWS} are kept).`
        : `${fmt(visible)} of ${fmt(rows.length)} match the filter.`;
  const skipped = $('watch-skipped');
  skipped.dataset.value = String(w.skipped);
  skipped.textContent = `Not shown because of sampling: ${fmt(w.skipped)}.`;
  $('watch-empty').hidden = rows.length > 0;
}

function renderWatchPause() {
  const w = state.watch;
  const b = $('watch-pause');
  b.textContent = w.paused ? 'Resume' : 'Pause';
  // Held events can be shown even after the stream has closed.
  b.disabled = !w.paused && w.ws === null;
  const note = $('watch-paused');
  note.hidden = !w.paused;
  note.dataset.value = String(w.heldCount);
  const n = w.heldCount;
  note.textContent = `Paused: ${fmt(n)} new ${n === 1 ? 'event' : 'events'} held back. Resume adds ${n > WATCH_MAX_ROWS ? `the newest ${WATCH_MAX_ROWS}` : 'them'} to the table.`;
}

/** Attaches the live view's controls; a sign-out closes its stream (it signed in with the token). */
export function startLiveView() {
  onSignOut(() => resetWatch());
  $('watch-toggle').addEventListener(
    'change',
    /** @param {Event} e */ (e) => {
      if (/** @type {HTMLInputElement} */ (e.currentTarget).checked) openWatch();
      else closeWatch('Not watching. The table keeps what it showed.');
    },
  );

  $('watch-pause').addEventListener('click', () => {
    const w = state.watch;
    if (w.paused) {
      const held = w.held;
      Object.assign(w, { paused: false, held: [], heldCount: 0 });
      addWatchRows(held);
    } else w.paused = true;
    renderWatchPause();
  });

  $('watch-clear').addEventListener('click', () => {
    const w = state.watch;
    Object.assign(w, { held: [], heldCount: 0, skipped: 0 });
    $('watch-body').replaceChildren();
    renderWatchPause();
    renderWatchCounts();
  });

  $('watch-filter').addEventListener('input', () => {
    const f = watchFilter();
    for (const row of $('watch-body').rows) row.hidden = !watchMatches(row, f);
    renderWatchCounts();
  });

  document.addEventListener('visibilitychange', () => {
    const w = state.watch;
    if (w.hiddenTimer !== null) clearTimeout(w.hiddenTimer);
    w.hiddenTimer = null;
    if (document.hidden && w.ws !== null) {
      w.hiddenTimer = setTimeout(
        () => closeWatch('Stopped: the tab was hidden for a minute. Turn “Watch live” on again to go on watching.'),
        WATCH_HIDDEN_MS,
      );
    }
  });
}
