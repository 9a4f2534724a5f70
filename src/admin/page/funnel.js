// @ts-check
// The admin page: the funnel builder. Steps are event names, each with an optional filter written as
// `property op value` (op one of = != > <; the value read as JSON when it parses, else as text); the funnel is asked
// over the range the reports show and drawn as one bar per step, its width the step's share of the first, with the
// users, the conversion from the previous step and the median time from it. With a breakdown, one set of bars a key.
import { $, el, fmt, latestOnly, state } from './core.js';
import { api, describe, isSignedOutError } from './api.js';
import { shownRange } from './reports.js';

/**
 * @typedef {{ eventName: string, users: number, conversionFromFirst: number, conversionFromPrevious: number,
 *   medianSecondsFromPrevious: number | null }} FunnelStep
 * @typedef {{ steps: FunnelStep[], breakdown?: { key: string | null, steps: FunnelStep[] }[] }} Funnel
 */

const MAX_STEPS = 10;
const FILTER = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(!=|=|>|<)\s*(.+?)\s*$/;
const request = latestOnly();

/** One step's inputs. @param {string} name @param {string} filter */
function stepRow(name = '', filter = '') {
  return el(
    'div',
    { class: 'step', 'data-testid': 'funnel-step' },
    el('input', {
      type: 'text',
      placeholder: 'event name',
      value: name,
      'aria-label': 'event name',
      'data-testid': 'funnel-step-name',
    }),
    el('input', {
      type: 'text',
      placeholder: 'filter, e.g. amount > 100 (optional)',
      value: filter,
      'aria-label': 'filter',
      'data-testid': 'funnel-step-filter',
    }),
  );
}

/** The request's steps from the inputs, or a message saying what is wrong. @returns {{ steps: object[] } | { error: string }} */
function readSteps() {
  const steps = [];
  for (const row of $('funnel-steps').querySelectorAll('.step')) {
    const [name, filter] = /** @type {HTMLInputElement[]} */ ([...row.querySelectorAll('input')]);
    const eventName = name?.value.trim() ?? '';
    const where = filter?.value.trim() ?? '';
    if (eventName === '') continue;
    if (where === '') {
      steps.push({ eventName });
      continue;
    }
    const m = FILTER.exec(where);
    if (m === null) return { error: `"${where}" is not a filter such as amount > 100 or plan = "pro".` };
    let value = /** @type {unknown} */ (m[3]);
    try {
      value = JSON.parse(/** @type {string} */ (m[3]));
    } catch {
      // a bare word: text
    }
    steps.push({ eventName, where: { property: m[1], op: m[2], value } });
  }
  if (steps.length < 2) return { error: 'Name at least two steps.' };
  return { steps };
}

/** @param {number | null} s */
function duration(s) {
  if (s === null) return '';
  if (s < 90) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 5400) return `${(s / 60).toFixed(0)} min`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}

/** @param {FunnelStep[]} steps */
function bars(steps) {
  const first = steps[0]?.users ?? 0;
  return steps.map((s, k) => {
    const fill = el('div', { class: 'fill' });
    fill.style.setProperty('--share', String(first > 0 ? s.users / first : 0));
    const figures =
      k === 0
        ? `${fmt(s.users)} users`
        : `${fmt(s.users)} · ${(s.conversionFromPrevious * 100).toFixed(1)}% of the step before · median ${duration(s.medianSecondsFromPrevious) || '–'} after it`;
    return el(
      'div',
      { class: 'funnel-bar', 'data-testid': 'funnel-bar', 'data-users': String(s.users) },
      el('div', {}, el('strong', {}, s.eventName), el('div', { class: 'figures muted' }, figures)),
      el('div', { class: 'track' }, fill),
    );
  });
}

/** @param {Funnel} f */
function draw(f) {
  const groups = (f.breakdown ?? []).map((g) =>
    el(
      'div',
      { class: 'funnel-group', 'data-testid': 'funnel-group', 'data-key': g.key ?? '' },
      el('h4', {}, g.key ?? '(none)'),
      ...bars(g.steps),
    ),
  );
  $('funnel-bars').replaceChildren(...bars(f.steps), ...groups);
}

export function resetFunnel() {
  request();
  $('funnel-bars').replaceChildren();
  $('funnel-status').textContent = '';
}

export function startFunnel() {
  $('funnel-steps').replaceChildren(stepRow('app_open'), stepRow(), stepRow());
  $('funnel-add').addEventListener('click', () => {
    if ($('funnel-steps').children.length < MAX_STEPS) $('funnel-steps').append(stepRow());
  });
  $('funnel-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ (e) => {
      e.preventDefault();
      const range = shownRange();
      const read = readSteps();
      if ('error' in read || range === null) {
        $('funnel-status').textContent = 'error' in read ? read.error : 'The reports are not loaded yet.';
        return;
      }
      const by = $('funnel-by').value;
      const projectId = state.projectId;
      const current = request();
      $('funnel-status').textContent = 'Counting…';
      api('POST', `/admin/projects/${projectId}/reports/funnel`, {
        steps: read.steps,
        from: range.from,
        to: range.to,
        windowS: Number($('funnel-window').value),
        ...(by === '' ? {} : { by }),
      })
        .then((/** @type {Funnel} */ f) => {
          if (projectId !== state.projectId || !current()) return;
          $('funnel-status').textContent = `${range.from} to ${range.to}`;
          draw(f);
        })
        .catch((err) => {
          if (!isSignedOutError(err) && current()) $('funnel-status').textContent = describe(err);
        });
    },
  );
}
