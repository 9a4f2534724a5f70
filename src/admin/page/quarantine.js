// @ts-check
// The admin page: the quarantine (summary, pages, detail, dry-run then replay, delete).
import { $, el, emptyQuarantine, fmt, fmtTime, onQuarantineChange, state, timeEl } from './core.js';
import { api, busy, describe, flash, isSignedOutError, onSignOut } from './api.js';
import { confirmable } from './confirm.js';
import { codeList } from './format.js';
import { limits, readLimits } from './limits.js';
import { loadUsage } from './usage.js';

/**
 * @typedef {import('./core.js').QuarantineItem} QuarantineItem
 * @typedef {import('./core.js').QuarantineCount} QuarantineCount
 * @typedef {import('./core.js').ReplayResult} ReplayResult
 * @typedef {import('./core.js').ReplayScope} ReplayScope
 */

const Q_PAGE = 50;
/** @param {string | null} projectId @param {string} [rest] */
const quarantinePath = (projectId, rest = '') => `/admin/projects/${projectId}/quarantine${rest}`;

/** @param {string | null} code @param {number | null} [before] */
function quarantineQuery(code, before) {
  const q = new URLSearchParams({ limit: String(Q_PAGE) });
  if (code !== null) q.set('code', code);
  if (before !== undefined && before !== null) q.set('before', String(before));
  return `?${q}`;
}

/** A fresh view; its generation goes up, so answers still on their way for the old one are dropped. */
export function resetQuarantine() {
  state.q = emptyQuarantine(state.q.gen + 1);
  $('replay-result').hidden = true;
  quarantineError('');
  renderQuarantine();
}

/** @param {string} message */
function quarantineError(message) {
  $('quarantine-error').textContent = message;
  $('quarantine-error').hidden = message === '';
}

/** The summary and the first page under the current filter. */
export async function loadQuarantine() {
  const projectId = state.projectId;
  const q = state.q;
  if (projectId === null) return;
  const gen = ++q.gen;
  try {
    /** @type {[QuarantineCount[], { items: QuarantineItem[], next: number | null }]} */
    const [summary, page] = await Promise.all([
      api('GET', quarantinePath(projectId, '/summary')),
      api('GET', quarantinePath(projectId, quarantineQuery(q.code))),
    ]);
    if (q !== state.q || gen !== q.gen) return;
    Object.assign(q, { summary, items: page.items, next: page.next, loaded: true });
    // Replay takes the rows ticked that are still listed: never an event the user no longer sees.
    const listed = new Set(page.items.map((i) => i.id));
    for (const id of q.selected) if (!listed.has(id)) q.selected.delete(id);
    if (q.detailId !== null && !listed.has(q.detailId)) q.detailId = null;
    quarantineError('');
    renderQuarantine();
  } catch (err) {
    if (!isSignedOutError(err) && q === state.q && gen === q.gen)
      quarantineError(`The quarantine could not be loaded: ${describe(err)}`);
  }
}

/** A background refresh under way: one at a time, however often the live totals move. */
let refreshing = false;

/**
 * The counts by code asked again; the list too while the user is doing nothing with it (nothing ticked or open, no dry
 * run, one page and no more to load), so that rows never move under a selection or a click.
 */
async function refreshQuarantine() {
  const projectId = state.projectId;
  const q = state.q;
  if (projectId === null || !q.loaded || refreshing) return;
  refreshing = true;
  try {
    if (q.selected.size === 0 && q.detailId === null && q.preview === null && q.next === null) await loadQuarantine();
    else await refreshSummary(projectId, q);
  } finally {
    refreshing = false;
  }
}

/** @param {string} projectId @param {import('./core.js').QuarantineView} q */
async function refreshSummary(projectId, q) {
  const gen = q.gen;
  try {
    /** @type {QuarantineCount[]} */
    const summary = await api('GET', quarantinePath(projectId, '/summary'));
    if (q !== state.q || gen !== q.gen) return;
    q.summary = summary;
    renderQuarantineSummary();
  } catch (err) {
    if (!isSignedOutError(err) && q === state.q && gen === q.gen)
      quarantineError(`The quarantine could not be loaded: ${describe(err)}`);
  }
}

/** @param {string | null} code */
function setQuarantineFilter(code) {
  const q = state.q;
  if (q.code === code) return;
  Object.assign(q, { code, items: [], next: null, loaded: false, detailId: null });
  q.selected.clear();
  hidePreview();
  renderQuarantine();
  loadQuarantine();
}

function renderQuarantine() {
  const q = state.q;
  renderQuarantineSummary();
  $('quarantine-filter').textContent =
    q.code === null
      ? 'Showing every quarantined event, newest first.'
      : `Showing the events with the code ${q.code}, newest first.`;
  $('quarantine-body').replaceChildren(...q.items.map(quarantineRow));
  const empty = $('quarantine-empty');
  empty.hidden = !q.loaded || q.items.length > 0;
  empty.textContent = q.code === null ? 'Nothing in quarantine.' : `No quarantined event has the code ${q.code}.`;
  $('quarantine-more').hidden = q.next === null;
  renderReplayButton();
  showQuarantineDelete();
  renderPreview();
  renderDetail();
}

function renderQuarantineSummary() {
  const q = state.q;
  const counts = q.summary.slice();
  // The filter stays visible (at 0) when its last events have left.
  if (q.code !== null && !counts.some((s) => s.code === q.code)) counts.push({ code: q.code, count: 0 });
  /** @param {string | null} code @param {(Node | string)[]} content */
  const chip = (code, ...content) => {
    const b = el(
      'button',
      {
        type: 'button',
        class: 'chip',
        'data-testid': code === null ? 'quarantine-code-all' : 'quarantine-code',
        'data-code': code ?? undefined,
        'aria-pressed': q.code === code ? 'true' : 'false',
      },
      ...content,
    );
    b.addEventListener('click', () => setQuarantineFilter(code));
    return el('li', {}, b);
  };
  $('quarantine-summary').replaceChildren(
    chip(null, 'All'),
    ...counts.map((s) =>
      chip(
        s.code,
        el('code', {}, s.code),
        ' ',
        el('span', { class: 'count', 'data-testid': 'quarantine-code-count' }, fmt(s.count)),
      ),
    ),
  );
}

/** @param {QuarantineItem} item @returns {string | null} */
function eventNameOf(item) {
  const e = /** @type {{ eventName?: unknown } | null} */ (item.event);
  return e !== null && typeof e === 'object' && !Array.isArray(e) && typeof e.eventName === 'string'
    ? e.eventName
    : null;
}

/** @param {QuarantineItem} item */
function quarantineRow(item) {
  const q = state.q;
  const label = item.eventId ?? `#${item.id}`;
  const name = eventNameOf(item);
  const select = el('input', {
    type: 'checkbox',
    'data-testid': 'quarantine-select',
    'aria-label': `Select event ${label} for replay`,
  });
  select.checked = q.selected.has(item.id);
  select.addEventListener('change', () => {
    if (select.checked) q.selected.add(item.id);
    else q.selected.delete(item.id);
    // A dry run on screen was for another set of events.
    hidePreview();
    renderReplayButton();
  });
  const current = q.detailId === item.id;
  const view = el(
    'button',
    {
      type: 'button',
      class: 'link mono',
      'data-testid': 'quarantine-view',
      'aria-controls': 'quarantine-detail',
      'aria-expanded': current ? 'true' : 'false',
    },
    label,
  );
  view.addEventListener('click', () => showDetail(item.id));
  return el(
    'tr',
    {
      'data-testid': 'quarantine-row',
      'data-id': item.id,
      'data-event-id': item.eventId ?? undefined,
      class: current ? 'current' : undefined,
    },
    el('td', { class: 'select', 'data-label': 'Replay' }, select),
    el('td', { 'data-label': 'Received' }, timeEl(item.receivedAt)),
    el('td', { 'data-label': 'Event id' }, view),
    el(
      'td',
      { class: 'token', 'data-label': 'Event', 'data-testid': 'quarantine-name', title: name ?? undefined },
      name ?? (item.truncated ? el('span', { class: 'badge warn' }, 'truncated') : el('span', { class: 'muted' }, '—')),
    ),
    el('td', { class: 'token', 'data-label': 'Channel' }, item.channel),
    el('td', { 'data-label': 'Codes', 'data-testid': 'quarantine-codes' }, codeList(item.diagnostics)),
  );
}

/** @param {number} id */
function showDetail(id) {
  state.q.detailId = id;
  for (const tr of $('quarantine-body').rows) {
    const current = Number(tr.dataset.id) === id;
    tr.classList.toggle('current', current);
    tr.querySelector('[data-testid="quarantine-view"]').setAttribute('aria-expanded', current ? 'true' : 'false');
  }
  renderDetail();
  const box = $('quarantine-detail');
  box.scrollIntoView({ block: 'nearest' });
  box.focus({ preventScroll: true });
}

function renderDetail() {
  const q = state.q;
  const item = q.detailId === null ? undefined : q.items.find((i) => i.id === q.detailId);
  const box = $('quarantine-detail');
  box.hidden = item === undefined;
  if (item === undefined) return;
  $('quarantine-detail-title').textContent = `Event ${item.eventId ?? `#${item.id}`}`;
  $('quarantine-detail-meta').textContent = [
    `received ${fmtTime(item.receivedAt)}`,
    item.channel,
    `bot ${item.botId}`,
    item.userId === null ? null : `user ${item.userId}`,
  ]
    .filter((x) => x !== null)
    .join(' · ');
  $('quarantine-truncated').hidden = !item.truncated;
  // A cut event is the text of its first 64 KiB, not JSON: shown as it is.
  $('quarantine-event').textContent = item.truncated ? String(item.event) : JSON.stringify(item.event, null, 2);
  $('quarantine-diagnostics').replaceChildren(
    ...item.diagnostics.map((d) =>
      el(
        'li',
        { 'data-testid': 'quarantine-diagnostic', 'data-code': d.code },
        el('code', {}, d.code),
        ' ',
        el('span', { class: `badge ${d.severity === 'error' ? 'bad' : 'warn'}` }, d.severity),
        ' ',
        el('span', { class: 'mono small' }, d.path),
        el('br'),
        el('span', { class: 'small' }, d.message),
      ),
    ),
  );
}

/** What a replay takes: the rows ticked, else every event under the current filter. @returns {ReplayScope} */
function replayScope() {
  const q = state.q;
  const n = q.selected.size;
  if (n > 0)
    return {
      body: { ids: [...q.selected] },
      text: `the ${n} selected ${n === 1 ? 'event' : 'events'}`,
      label: `Replay ${n} selected…`,
    };
  if (q.code !== null)
    return { body: { code: q.code }, text: `the events with the code ${q.code}`, label: `Replay all with ${q.code}…` };
  return { body: {}, text: 'all quarantined events', label: 'Replay all…' };
}

function renderReplayButton() {
  const b = $('quarantine-replay');
  b.textContent = replayScope().label;
  b.disabled = state.q.items.length === 0;
}

export function hidePreview() {
  state.q.preview = null;
  $('replay-preview').hidden = true;
}

function renderPreview() {
  const p = state.q.preview;
  $('replay-preview').hidden = p === null;
  if (p === null) return;
  const r = p.result;
  $('replay-preview-scope').textContent =
    r.replayed === 0
      ? `Dry run of ${p.scope.text}: there is nothing to replay.`
      : `Dry run of ${p.scope.text}: ${fmt(r.replayed)} ${r.replayed === 1 ? 'event' : 'events'} checked against the current pipeline and tracking plan. Nothing has changed yet.`;
  for (const [id, value] of /** @type {[string, number][]} */ ([
    ['replay-accepted', r.accepted],
    ['replay-rejected', r.stillRejected],
    ['replay-duplicated', r.duplicated],
  ])) {
    const dd = $('replay-preview').querySelector(`[data-testid="${id}"]`);
    dd.textContent = fmt(value);
    dd.dataset.value = String(value);
  }
  $('replay-preview-note').textContent =
    '“Replay now” stores the accepted events (billed as usual) and takes them and the duplicated ones out of quarantine; the others stay, with their new reasons.' +
    (limits.replayMax !== null && r.replayed >= limits.replayMax
      ? ` One replay takes the oldest ${fmt(limits.replayMax)}; replay again for the rest.`
      : '');
  $('replay-confirm').disabled = r.replayed === 0;
}

/** Draws the delete button again (its label and state follow the view); set by startQuarantine. */
let showQuarantineDelete = () => {};

/** Attaches the quarantine's buttons, reads the replay bound; a sign-out empties the view. */
export function startQuarantine() {
  onSignOut(() => resetQuarantine());
  onQuarantineChange(() => void refreshQuarantine());
  void readLimits();
  $('quarantine-detail-close').addEventListener('click', () => {
    const id = state.q.detailId;
    state.q.detailId = null;
    renderQuarantine();
    const row = [...$('quarantine-body').rows].find((r) => Number(r.dataset.id) === id);
    if (row) row.querySelector('[data-testid="quarantine-view"]').focus();
  });

  $('quarantine-more').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => {
      const q = state.q;
      const projectId = state.projectId;
      const gen = q.gen;
      busy(
        /** @type {HTMLButtonElement} */ (e.currentTarget),
        async () => {
          /** @type {{ items: QuarantineItem[], next: number | null }} */
          const page = await api('GET', quarantinePath(projectId, quarantineQuery(q.code, q.next)));
          if (q !== state.q || gen !== q.gen) return;
          const first = q.items.length;
          q.items = q.items.concat(page.items);
          q.next = page.next;
          renderQuarantine();
          // The button may be gone now (the last page): keep the keyboard where the new rows start.
          const row = $('quarantine-body').rows[first];
          if (row && q.next === null) row.querySelector('[data-testid="quarantine-view"]').focus();
        },
        (err) => quarantineError(describe(err)),
      );
    },
  );

  $('quarantine-refresh').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => {
      hidePreview();
      busy(/** @type {HTMLButtonElement} */ (e.currentTarget), loadQuarantine);
    },
  );

  // Replay stores and bills: it always shows a dry run first, and runs only on a second, explicit click.
  $('quarantine-replay').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => {
      const q = state.q;
      const projectId = state.projectId;
      const scope = replayScope();
      $('replay-result').hidden = true;
      quarantineError('');
      busy(
        /** @type {HTMLButtonElement} */ (e.currentTarget),
        async () => {
          /** @type {ReplayResult} */
          const result = await api('POST', quarantinePath(projectId, '/replay'), { ...scope.body, dryRun: true });
          if (q !== state.q || projectId === null) return;
          q.preview = { projectId, scope, result };
          renderPreview();
          (result.replayed === 0 ? $('replay-cancel') : $('replay-confirm')).focus();
        },
        (err) => quarantineError(describe(err)),
      );
    },
  );

  $('replay-confirm').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => {
      const q = state.q;
      const p = q.preview;
      if (p === null) return;
      busy(
        /** @type {HTMLButtonElement} */ (e.currentTarget),
        async () => {
          /** @type {ReplayResult} */
          const r = await api('POST', quarantinePath(p.projectId, '/replay'), p.scope.body);
          if (q !== state.q) return;
          hidePreview();
          q.selected.clear();
          const result = $('replay-result');
          result.textContent = `Replayed ${fmt(r.replayed)}: ${fmt(r.accepted)} accepted and stored, ${fmt(r.stillRejected)} still rejected, ${fmt(r.duplicated)} duplicated.`;
          result.hidden = false;
          $('quarantine-replay').focus();
          await Promise.all([loadQuarantine(), loadUsage()]);
        },
        (err) => quarantineError(describe(err)),
      );
    },
  );

  $('replay-cancel').addEventListener('click', () => {
    hidePreview();
    $('quarantine-replay').focus();
  });

  showQuarantineDelete = confirmable($('quarantine-delete-slot'), {
    testid: 'quarantine-delete',
    label: () => (state.q.code !== null ? `Delete all with ${state.q.code}…` : 'Delete all…'),
    disabled: () => state.q.items.length === 0,
    question: () => {
      const q = state.q;
      if (q.code === null) return 'Delete every quarantined event of this project? They cannot be replayed afterwards.';
      const s = q.summary.find((x) => x.code === q.code);
      return `Delete the ${s ? `${fmt(s.count)} ` : ''}events with the code ${q.code}? They cannot be replayed afterwards.`;
    },
    yes: 'Yes, delete',
    run: async () => {
      const q = state.q;
      const code = q.code;
      await api('DELETE', quarantinePath(state.projectId, code === null ? '' : `?code=${encodeURIComponent(code)}`));
      if (q !== state.q) return;
      hidePreview();
      flash(code === null ? 'Quarantine emptied.' : `Quarantined events with the code ${code} deleted.`);
      await loadQuarantine();
    },
    onError: (err) => quarantineError(describe(err)),
  });
}
