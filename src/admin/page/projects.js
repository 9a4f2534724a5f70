// @ts-check
// The admin page: the project list, creating and editing projects, the usage card.
import { $, el, fmt, latestOnly, PROJECT_KEY, state } from './core.js';
import { api, busy, describe, flash, isSignedOutError } from './api.js';
import { loadBots, renderBots } from './bots.js';
import { loadPlan, resetPlan } from './plan.js';
import { loadQuarantine, resetQuarantine } from './quarantine.js';
import { resetWatch } from './live.js';
import { resetLive, startLive } from './counts.js';
import { loadReports, resetReports } from './reports.js';
import { loadPrivacy, resetPrivacy } from './privacy.js';

const allowanceText = (a) => (a === null || a === undefined ? 'unlimited' : `${fmt(a)} events / month`);

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

/** '' → null (unlimited); otherwise a non-negative integer, or undefined when invalid. */
function parseAllowance(raw) {
  const v = raw.trim();
  if (v === '') return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

$('project-create-form').addEventListener('submit', async (e) => {
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
  await busy(e.submitter, async () => {
    const { project } = await api('POST', '/admin/projects', { name, eventAllowance });
    state.projects.push(project);
    e.target.reset();
    renderProjects();
    selectProject(project.projectId);
    flash(`Project “${project.name}” created.`);
  });
});

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

/** Scrolls to a section of the project and names it in the URL, so the link opens it again. */
export function goToSection(name) {
  const target = document.getElementById(`section-${name}`);
  if (target === null || state.projectId === null) return;
  history.replaceState(null, '', `#project=${state.projectId}&section=${name}`);
  for (const a of document.querySelectorAll('.section-nav a'))
    a.setAttribute('aria-current', a.getAttribute('data-section') === name ? 'true' : 'false');
  target.scrollIntoView({ block: 'start' });
}

for (const a of document.querySelectorAll('.section-nav a'))
  a.addEventListener('click', (e) => {
    e.preventDefault();
    goToSection(a.getAttribute('data-section') ?? '');
  });

$('allowance-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = $('allowance-input');
  const eventAllowance = input.validity.badInput ? undefined : parseAllowance(input.value);
  if (eventAllowance === undefined) {
    flash('The allowance must be a whole number of events, or empty for unlimited.', 'error');
    input.focus();
    return;
  }
  const projectId = state.projectId;
  await busy(e.submitter, async () => {
    const project = await api('PATCH', `/admin/projects/${projectId}`, { eventAllowance });
    state.projects = state.projects.map((p) => (p.projectId === projectId ? project : p));
    renderProjects();
    if (state.projectId === projectId) loadUsage();
    flash(`Allowance saved: ${allowanceText(project.eventAllowance)}.`);
  });
});

/** The usage card is asked for by the refresh loop and after a change (an allowance, a replay): the latest wins. */
export const usageRequest = latestOnly();

export async function loadUsage() {
  const projectId = state.projectId;
  const current = usageRequest();
  try {
    const u = await api('GET', `/admin/projects/${projectId}/usage`);
    if (projectId === state.projectId && current()) renderUsage(u);
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Usage: ${describe(err)}`, 'error');
  }
}

export function renderUsage(u) {
  const set = (id, text) => {
    const dd = $('usage').querySelector(`[data-testid="${id}"]`);
    dd.textContent = text;
    return dd;
  };
  set('usage-month', u.month);
  set('usage-billed', fmt(u.eventsBilled)).dataset.value = String(u.eventsBilled);
  set('usage-stored', fmt(u.eventsStored)).dataset.value = String(u.eventsStored);
  set('usage-allowance', allowanceText(u.eventAllowance));
}
