// @ts-check
// The admin page: a person's data on request. Erasures for pasted ids (a second click names how many users),
// their progress, the suppressed users with a lift button each, and a user's export.
import { $, el, fmt, STORAGE_KEY, state, timeEl } from './core.js';
import { api, ApiError, busy, describe, flash, isSignedOutError, onSignOut } from './api.js';
import { confirmable } from './confirm.js';
import { limits, readLimits } from './limits.js';

/**
 * @typedef {{ erasureId: string, status: string, createdAt: string, finishedAt: string | null, userCount: number,
 *   suppress: boolean, digest?: string, error?: string | null,
 *   deleted: { events: number, users: number, quarantine: number } }} Erasure
 * @typedef {{ userId: string, erasureId: string | null, createdAt: string }} Suppression
 */

const ID = /^[1-9][0-9]{0,18}$/;
/** How often a running erasure's progress is asked while the view is open. */
const PROGRESS_MS = 2000;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let progressTimer;

/** The ids in the box: distinct, in order; `bad` holds what is not an id. */
function pastedIds() {
  /** @type {string[]} */
  const words = $('erasure-ids')
    .value.split(/[\s,;]+/)
    .filter((/** @type {string} */ w) => w !== '');
  return { ids: [...new Set(words.filter((w) => ID.test(w)))], bad: words.filter((w) => !ID.test(w)) };
}

/** Draws the erasure button again (its state follows the box); set by startPrivacy. */
let showRequest = () => {};

export function resetPrivacy() {
  clearTimeout(progressTimer);
  $('erasures-body').replaceChildren();
  $('suppressions-list').replaceChildren();
  $('erasures-empty').hidden = true;
  $('suppressions-empty').hidden = true;
  $('erasure-error').hidden = true;
  showRequest();
}

export async function loadPrivacy() {
  const projectId = state.projectId;
  clearTimeout(progressTimer);
  try {
    /** @type {[{ items: Erasure[] }, { items: Suppression[], next: string | null }]} */
    const [erasures, suppressions] = await Promise.all([
      api('GET', `/admin/projects/${projectId}/erasures?limit=20`),
      api('GET', `/admin/projects/${projectId}/suppressions?limit=100`),
    ]);
    if (projectId !== state.projectId) return;
    renderErasures(erasures.items);
    renderSuppressions(suppressions.items, suppressions.next !== null);
    // While one runs, its counts move: ask again shortly.
    if (erasures.items.some((e) => e.status === 'pending' || e.status === 'running'))
      progressTimer = setTimeout(() => {
        if (!document.hidden && projectId === state.projectId) loadPrivacy();
      }, PROGRESS_MS);
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Privacy: ${describe(err)}`, 'error');
  }
}

/** @param {Erasure[]} items */
function renderErasures(items) {
  $('erasures-empty').hidden = items.length > 0;
  $('erasures-body').replaceChildren(
    ...items.map((e) =>
      el(
        'tr',
        { 'data-testid': 'erasure-row', 'data-status': e.status },
        el('td', { 'data-label': 'Requested' }, timeEl(e.createdAt)),
        el('td', { 'data-label': 'Users', title: e.digest }, `${fmt(e.userCount)}${e.suppress ? ' · kept out' : ''}`),
        el(
          'td',
          { 'data-label': 'Status', 'data-testid': 'erasure-status' },
          el(
            'span',
            { class: `badge ${e.status === 'failed' ? 'bad' : e.status === 'done' ? 'on' : 'warn'}` },
            e.status,
          ),
          e.error ? ` ${e.error}` : '',
        ),
        el('td', { class: 'num', 'data-label': 'Events', 'data-testid': 'erasure-events' }, fmt(e.deleted.events)),
        el('td', { class: 'num', 'data-label': 'Profiles' }, fmt(e.deleted.users)),
        el('td', { class: 'num', 'data-label': 'Quarantined' }, fmt(e.deleted.quarantine)),
        el('td', { 'data-label': 'Finished' }, e.finishedAt ? timeEl(e.finishedAt) : '—'),
      ),
    ),
  );
}

/** What the suppression list shows: redrawn only when it changes, so a "Lift" being confirmed stays open. */
let shownSuppressions = '';

/** @param {Suppression[]} items @param {boolean} more */
function renderSuppressions(items, more) {
  const key = JSON.stringify([state.projectId, more, items.map((s) => [s.userId, s.createdAt])]);
  if (key === shownSuppressions && $('suppressions-list').childElementCount > 0) return;
  shownSuppressions = key;
  $('suppressions-empty').hidden = items.length > 0;
  $('suppressions-list').replaceChildren(
    ...items.map((s) => {
      const slot = el('span');
      const li = el(
        'li',
        { 'data-testid': 'suppression', 'data-user': s.userId },
        el('span', { class: 'mono' }, s.userId),
        el('span', { class: 'muted small' }, 'since ', timeEl(s.createdAt)),
        slot,
      );
      confirmable(slot, {
        testid: 'suppression-lift',
        label: () => 'Lift',
        disabled: () => false,
        yes: 'Lift',
        question: () => `Store events of ${s.userId} again?`,
        run: async () => {
          await api('DELETE', `/admin/projects/${state.projectId}/suppressions/${s.userId}`);
          flash(`${s.userId} is no longer kept out.`);
          await loadPrivacy();
        },
      });
      return li;
    }),
    ...(more ? [el('li', { class: 'muted small' }, 'More suppressed users: see the API or the CLI.')] : []),
  );
}

/** Attaches the erasure box, the refresh and the export form. */
export function startPrivacy() {
  void readLimits();
  // What was pasted or typed here names users: it goes with the session.
  onSignOut(() => {
    resetPrivacy();
    $('erasure-ids').value = '';
    $('erasure-suppress').checked = false;
    $('export-user').value = '';
  });
  showRequest = confirmable($('erasure-slot'), {
    testid: 'erasure-request',
    label: () => 'Erase…',
    disabled: () => pastedIds().ids.length === 0,
    yes: 'Erase',
    question: () => {
      const n = pastedIds().ids.length;
      const keep = $('erasure-suppress').checked ? ' and keep them out' : '';
      return `Erase everything stored about ${fmt(n)} ${n === 1 ? 'user' : 'users'}${keep}? This cannot be undone.`;
    },
    run: async () => {
      await readLimits();
      const { ids, bad } = pastedIds();
      const error = $('erasure-error');
      error.hidden = true;
      const max = limits.erasureMax;
      if (bad.length > 0 || (max !== null && ids.length > max)) {
        error.textContent =
          bad.length > 0
            ? `Not a user id: ${bad.slice(0, 3).join(', ')}${bad.length > 3 ? '…' : ''}`
            : `At most ${fmt(max)} users per request.`;
        error.hidden = false;
        return;
      }
      const projectId = state.projectId;
      /** @type {Erasure} */
      const e = await api('POST', `/admin/projects/${projectId}/erasures`, {
        userIds: ids,
        suppress: $('erasure-suppress').checked,
      });
      $('erasure-ids').value = '';
      $('erasure-suppress').checked = false;
      flash(`Erasure of ${fmt(e.userCount)} ${e.userCount === 1 ? 'user' : 'users'} requested.`);
      if (projectId === state.projectId) await loadPrivacy();
    },
    onError: (err) => {
      $('erasure-error').textContent = describe(err);
      $('erasure-error').hidden = false;
    },
  });

  $('erasure-ids').addEventListener('input', () => showRequest());
  $('erasure-suppress').addEventListener('change', () => showRequest());

  $('privacy-refresh').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => busy(/** @type {HTMLButtonElement} */ (e.currentTarget), loadPrivacy),
  );

  /** The export, fetched with the admin token (a plain link cannot carry it) and saved as a file. */
  $('export-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const user = $('export-user').value.trim();
      if (!ID.test(user)) {
        flash('A user id is a positive whole number.', 'error');
        $('export-user').focus();
        return;
      }
      await busy(/** @type {HTMLButtonElement | null} */ (e.submitter), async () => {
        const res = await fetch(`/admin/projects/${state.projectId}/users/${user}/export`, {
          headers: { authorization: `Bearer ${sessionStorage.getItem(STORAGE_KEY) ?? ''}` },
        });
        if (!res.ok) throw new ApiError(res.status, 'export', `The export could not be made (${res.status}).`);
        const url = URL.createObjectURL(await res.blob());
        const a = el('a', { href: url, download: `user-${user}.ndjson` });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      });
    },
  );
}
