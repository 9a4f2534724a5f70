// @ts-check
// The admin page: signing in (the token lives in sessionStorage) and what the page shows once signed out.
import { $, PROJECT_KEY, state, STORAGE_KEY } from './core.js';
import { api, ApiError, describe, onSignOut, signOut } from './api.js';
import { renderProjects, selectProject } from './projects.js';

/** @typedef {import('./core.js').Project} Project */

/** @param {string} message */
export function showLoginError(message) {
  const p = $('login-error');
  p.textContent = message;
  p.hidden = message === '';
}

/** @param {string} token */
export async function signIn(token) {
  /** @type {Project[]} */
  const projects = await api('GET', '/admin/projects', undefined, token);
  sessionStorage.setItem(STORAGE_KEY, token);
  showLoginError('');
  $('login').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  state.projects = projects;
  renderProjects();
  const wanted = /^#project=([0-9a-f-]{36})(?:&section=[a-z]+)?$/i.exec(location.hash);
  const remembered = sessionStorage.getItem(PROJECT_KEY);
  /** @param {string | null | undefined} id */
  const byId = (id) => (id ? projects.find((p) => p.projectId === id.toLowerCase()) : undefined);
  // A link names a project on purpose; else the one this tab had open; a lone project needs no choosing.
  const initial = byId(wanted?.[1]) ?? byId(remembered) ?? (projects.length === 1 ? projects[0] : undefined);
  if (remembered !== null && !byId(remembered)) sessionStorage.removeItem(PROJECT_KEY);
  if (initial) selectProject(initial.projectId);
}

/** The page as a sign-out leaves it: no project, the sign-in form, and why (`message`). @param {string} message */
function showSignedOut(message) {
  Object.assign(state, { projects: [], projectId: null, bots: [], dialogBot: null });
  $('project-list').replaceChildren();
  $('bots-body').replaceChildren();
  $('project').hidden = true;
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('login').hidden = false;
  $('flash').hidden = true;
  history.replaceState(null, '', location.pathname);
  showLoginError(message);
  const input = $('login-token');
  input.value = '';
  input.focus();
}

/** Attaches the sign-in form and the sign-out button; started after the views, so it is the last to hear a sign-out. */
export function startSignIn() {
  onSignOut(showSignedOut);
  $('login-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const token = $('login-token').value.trim();
      if (token === '') {
        showLoginError('Enter the admin token.');
        return;
      }
      const button = e.submitter ?? $('login-form').querySelector('button');
      button.disabled = true;
      try {
        await signIn(token);
      } catch (err) {
        showLoginError(
          err instanceof ApiError && err.status === 401
            ? 'That admin token is not accepted (admin_unauthorized). Check it and try again.'
            : describe(err),
        );
      } finally {
        button.disabled = false;
      }
    },
  );
  $('sign-out').addEventListener('click', () => signOut());
}
