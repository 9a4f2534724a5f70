// @ts-check
// The admin page: the tracking-plan editor.
import { $, el, state, timeEl } from './core.js';
import { api, ApiError, busy, describe, flash, isSignedOutError, onSignOut } from './api.js';
import { confirmable } from './confirm.js';
import { hidePreview } from './quarantine.js';

/** @typedef {import('./core.js').StoredPlan} StoredPlan */

/** What the editor offers when the project has no plan: the loosest plan, which changes nothing. */
const PLAN_TEMPLATE = { mode: 'warn', unplannedEvents: 'allow', events: {} };

/** @param {{ mode: string, unplannedEvents: string, events: unknown }} p */
const planTextOf = (p) =>
  JSON.stringify({ mode: p.mode, unplannedEvents: p.unplannedEvents, events: p.events }, null, 2);

export function resetPlan() {
  state.plan = null;
  state.planText = '';
  const text = $('plan-text');
  text.value = '';
  // Until this project's plan has arrived: saving the text of the previous one would copy it here.
  text.disabled = true;
  $('plan-save').disabled = true;
  $('plan-status').textContent = '';
  planError(null);
  renderPlanDirty();
  showPlanDelete();
}

export async function loadPlan() {
  const projectId = state.projectId;
  $('plan-status').textContent = 'Loading the tracking plan…';
  /** @type {StoredPlan | null} */
  let plan = null;
  try {
    // The project says whether it has a plan: one without is not asked for it (a 404 every console would show).
    const project = await api('GET', `/admin/projects/${projectId}`);
    if (project.trackingPlanVersion !== null) plan = await api('GET', `/admin/projects/${projectId}/tracking-plan`);
  } catch (err) {
    if (isSignedOutError(err) || projectId !== state.projectId) return;
    // 404 is "no plan": the project itself was there a moment ago.
    if (!(err instanceof ApiError && err.status === 404)) {
      $('plan-status').textContent = `The tracking plan could not be loaded: ${describe(err)}`;
      return;
    }
  }
  if (projectId === state.projectId) showPlan(plan);
}

/** @param {StoredPlan | null} plan */
function showPlan(plan) {
  state.plan = plan;
  state.planText = planTextOf(plan ?? PLAN_TEMPLATE);
  const text = $('plan-text');
  text.value = state.planText;
  text.disabled = false;
  $('plan-save').disabled = false;
  const status = $('plan-status');
  if (plan === null) {
    status.replaceChildren(
      el('strong', { 'data-testid': 'plan-none' }, 'No plan:'),
      ' events are checked against the contract only. Below is a starter template; it changes nothing until you add event schemas or tighten the policies.',
    );
  } else {
    const n = Object.keys(plan.events).length;
    status.replaceChildren(
      'Version ',
      el('strong', { 'data-testid': 'plan-version', 'data-value': plan.version }, String(plan.version)),
      ', saved ',
      el('span', { 'data-testid': 'plan-updated' }, timeEl(plan.updatedAt)),
      ` · mode ${plan.mode} · unplanned events: ${plan.unplannedEvents} · ${n} event ${n === 1 ? 'schema' : 'schemas'}`,
    );
  }
  renderPlanDirty();
  showPlanDelete();
}

function renderPlanDirty() {
  const text = $('plan-text');
  $('plan-dirty').hidden = text.disabled || text.value === state.planText;
}

/**
 * Says next to the editor why a plan was refused (null: clears it); `select` puts the caret on the culprit.
 * @param {string | null} message
 * @param {string} [detail]
 * @param {[number, number] | null} [select]
 */
function planError(message, detail = '', select = null) {
  $('plan-error').hidden = message === null;
  $('plan-error-message').textContent = message ?? '';
  const pre = $('plan-error-detail');
  pre.textContent = detail;
  pre.hidden = detail === '';
  const text = $('plan-text');
  if (message === null) text.removeAttribute('aria-invalid');
  else text.setAttribute('aria-invalid', 'true');
  if (select !== null) {
    text.focus();
    text.setSelectionRange(select[0], select[1]);
  }
}

/**
 * The editor's text as a plan, or null after saying why it is not one: then nothing is sent.
 * @param {string} whatNot
 * @returns {Record<string, unknown> | null}
 */
function parsePlanText(whatNot) {
  const text = $('plan-text').value;
  let plan;
  try {
    plan = JSON.parse(text);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // V8 gives the offset ("… at position 12 (line 2 column 3)"): the caret goes there.
    const m = /position (\d+)/.exec(message);
    const at = m ? Math.min(Number(m[1]), text.length) : null;
    planError(`This is not valid JSON; ${whatNot}.`, message, at === null ? null : [at, at]);
    return null;
  }
  if (plan === null || typeof plan !== 'object' || Array.isArray(plan)) {
    planError(`A tracking plan is a JSON object: {"mode": …, "unplannedEvents": …, "events": {…}}; ${whatNot}.`);
    return null;
  }
  // The API's answers carry these two: a plan copied from one can be pasted back as it is.
  delete plan.version;
  delete plan.updatedAt;
  return plan;
}

/**
 * Where the text has `name` as a key ("name": …), to point at the schema ajv refused.
 * @param {string} text
 * @param {string} name
 * @returns {[number, number] | null}
 */
function keyRange(text, name) {
  const quoted = JSON.stringify(name);
  for (let i = text.indexOf(quoted); i !== -1; i = text.indexOf(quoted, i + 1)) {
    if (/^\s*:/.test(text.slice(i + quoted.length, i + quoted.length + 40))) return [i, i + quoted.length];
  }
  return null;
}

/**
 * The part of a 400's details worth showing beside its message: ajv's own words, or the values allowed.
 * @param {ApiError} err
 */
function planErrorDetail(err) {
  const d = err.details;
  if (d === null) return '';
  if (typeof d.error === 'string') return d.error;
  const first = Array.isArray(d.errors) ? d.errors[0] : null;
  if (first?.params && Array.isArray(first.params.allowedValues))
    return `Allowed: ${first.params.allowedValues.map((/** @type {unknown} */ v) => JSON.stringify(v)).join(', ')}`;
  return '';
}

/** Draws the delete button of the plan again (its state follows the view); set by startPlan. */
let showPlanDelete = () => {};

/** Attaches the editor's buttons; a sign-out empties it. */
export function startPlan() {
  onSignOut(() => resetPlan());
  $('plan-text').addEventListener('input', renderPlanDirty);

  $('plan-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const plan = parsePlanText('nothing was sent');
      if (plan === null) return;
      const projectId = state.projectId;
      await busy(
        /** @type {HTMLButtonElement} */ (e.submitter ?? $('plan-save')),
        async () => {
          /** @type {StoredPlan} */
          const stored = await api('PUT', `/admin/projects/${projectId}/tracking-plan`, plan);
          if (projectId !== state.projectId) return;
          planError(null);
          showPlan(stored);
          // A dry run on screen was worked out under the old plan.
          hidePreview();
          const waiting =
            state.q.items.length > 0
              ? ' Events already in quarantine are checked again only when you replay them.'
              : '';
          flash(`Tracking plan saved: version ${stored.version}. It applies to events from now on.${waiting}`);
        },
        (err) => {
          if (projectId !== state.projectId) return;
          if (!(err instanceof ApiError && err.status === 400)) {
            planError(describe(err));
            return;
          }
          const detail = planErrorDetail(err);
          const name = err.details && typeof err.details.eventName === 'string' ? err.details.eventName : null;
          // The message usually quotes ajv already; the detail is shown only when it adds something.
          planError(
            err.message,
            err.message.includes(detail) ? '' : detail,
            name === null ? null : keyRange($('plan-text').value, name),
          );
        },
      );
    },
  );

  $('plan-format').addEventListener('click', () => {
    const plan = parsePlanText('it was left as it is');
    if (plan === null) return;
    planError(null);
    $('plan-text').value = JSON.stringify(plan, null, 2);
    renderPlanDirty();
  });

  $('plan-revert').addEventListener('click', () => {
    $('plan-text').value = state.planText;
    planError(null);
    renderPlanDirty();
  });

  showPlanDelete = confirmable($('plan-delete-slot'), {
    testid: 'plan-delete',
    label: () => 'Delete plan',
    disabled: () => false,
    hidden: () => state.plan === null,
    question: () => 'Delete the plan? Events are then checked against the contract only.',
    yes: 'Yes, delete',
    run: async () => {
      const projectId = state.projectId;
      await api('DELETE', `/admin/projects/${projectId}/tracking-plan`);
      if (projectId !== state.projectId) return;
      planError(null);
      showPlan(null);
      hidePreview();
      flash('Tracking plan deleted: events are checked against the contract only.');
      $('plan-text').focus();
    },
    onError: (err) => planError(describe(err)),
  });
}
