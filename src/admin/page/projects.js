// @ts-check
// The admin page: the project list, creating and editing projects, and opening one, which loads every section of it.
import { $, el, PROJECT_KEY, state } from './core.js';
import { api, busy, flash } from './api.js';
import { loadBots, renderBots } from './bots.js';
import { resetLive, startLive } from './counts.js';
import { resetWatch } from './live.js';
import { loadPlan, resetPlan } from './plan.js';
import { loadPrivacy, resetPrivacy } from './privacy.js';
import { loadQuarantine, resetQuarantine } from './quarantine.js';
import { loadReports, resetReports } from './reports.js';
import { allowanceText, loadUsage } from './usage.js';

/** @typedef {import('./core.js').Project} Project */

export function renderProjects() {
  const list = $('project-list');
  list.replaceChildren(
    ...state.projects.map((p) => {
      const button = el(
        'button',
        {
          type: 'button',
          class: 'project-button',
          'data-testid': 'project-select',
          'aria-current': p.projectId === state.projectId ? 'true' : undefined,
        },
        el('span', { class: 'name' }, p.name),
        el('span', { class: 'muted small' }, allowanceText(p.eventAllowance)),
      );
      button.addEventListener('click', () => selectProject(p.projectId));
      return el('li', { 'data-testid': 'project-row', 'data-project-id': p.projectId }, button);
    }),
  );
  $('project-list-empty').hidden = state.projects.length > 0;
}

/**
 * '' → null (unlimited); otherwise a non-negative integer, or undefined when invalid.
 * @param {string} raw
 * @returns {number | null | undefined}
 */
function parseAllowance(raw) {
  const v = raw.trim();
  if (v === '') return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** @param {string} projectId */
export function selectProject(projectId) {
  const p = state.projects.find((x) => x.projectId === projectId);
  if (!p) return;
  state.projectId = projectId;
  sessionStorage.setItem(PROJECT_KEY, projectId);
  history.replaceState(null, '', `#project=${projectId}`);
  renderProjects();
  $('project').hidden = false;
  $('project-title').textContent = p.name;
  $('project-id').textContent = `project ${p.projectId}`;
  $('allowance-input').value = p.eventAllowance === null ? '' : String(p.eventAllowance);
  resetLive();
  // The stream and the quarantine belong to the project that was open: nothing of it may linger.
  resetWatch();
  resetQuarantine();
  resetPlan();
  resetReports();
  resetPrivacy();
  state.bots = [];
  renderBots();
  loadBots();
  loadPlan();
  loadQuarantine();
  loadReports();
  loadPrivacy();
  startLive();
  const section = /[#&]section=([a-z]+)/.exec(location.hash)?.[1];
  if (section !== undefined) goToSection(section);
}

/** Scrolls to a section of the project and names it in the URL, so the link opens it again. @param {string} name */
export function goToSection(name) {
  const target = document.getElementById(`section-${name}`);
  if (target === null || state.projectId === null) return;
  history.replaceState(null, '', `#project=${state.projectId}&section=${name}`);
  for (const a of document.querySelectorAll('.section-nav a'))
    a.setAttribute('aria-current', a.getAttribute('data-section') === name ? 'true' : 'false');
  target.scrollIntoView({ block: 'start' });
}

/** Attaches the project list's forms and the section links. */
export function startProjects() {
  $('project-create-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const name = $('project-name').value.trim();
      const allowanceInput = $('project-allowance');
      if (name === '') {
        flash('A project needs a name.', 'error');
        $('project-name').focus();
        return;
      }
      // A number input reports '' for text it cannot parse; validity tells that apart from empty.
      const eventAllowance = allowanceInput.validity.badInput ? undefined : parseAllowance(allowanceInput.value);
      if (eventAllowance === undefined) {
        flash('The allowance must be a whole number of events, or empty for unlimited.', 'error');
        allowanceInput.focus();
        return;
      }
      const form = /** @type {HTMLFormElement} */ (e.target);
      await busy(/** @type {HTMLButtonElement | null} */ (e.submitter), async () => {
        /** @type {{ project: Project }} */
        const { project } = await api('POST', '/admin/projects', { name, eventAllowance });
        state.projects.push(project);
        form.reset();
        renderProjects();
        selectProject(project.projectId);
        flash(`Project “${project.name}” created.`);
      });
    },
  );

  for (const a of document.querySelectorAll('.section-nav a'))
    a.addEventListener('click', (e) => {
      e.preventDefault();
      goToSection(a.getAttribute('data-section') ?? '');
    });

  $('allowance-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const input = $('allowance-input');
      const eventAllowance = input.validity.badInput ? undefined : parseAllowance(input.value);
      if (eventAllowance === undefined) {
        flash('The allowance must be a whole number of events, or empty for unlimited.', 'error');
        input.focus();
        return;
      }
      const projectId = state.projectId;
      await busy(/** @type {HTMLButtonElement | null} */ (e.submitter), async () => {
        /** @type {Project} */
        const project = await api('PATCH', `/admin/projects/${projectId}`, { eventAllowance });
        state.projects = state.projects.map((p) => (p.projectId === projectId ? project : p));
        renderProjects();
        if (state.projectId === projectId) loadUsage();
        flash(`Allowance saved: ${allowanceText(project.eventAllowance)}.`);
      });
    },
  );
}
