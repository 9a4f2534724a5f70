// @ts-check
// The admin page, its entry: empty views to start from, then the stored sign-in. Every section is a
// module of its own (core, api, signin, projects, bots, tokens, confirm, plan, quarantine, live, counts, reports,
// privacy),
// type-checked by tsconfig.page.json; data reaches the DOM through textContent and setAttribute only.
import { $, STORAGE_KEY } from './core.js';
import { ApiError, describe } from './api.js';
import { showLoginError, signIn, signOut } from './signin.js';
import { resetPlan } from './plan.js';
import { resetQuarantine } from './quarantine.js';
import { resetWatch } from './live.js';
import { resetReports } from './reports.js';

// Empty views to start from: their handlers can then assume a state.
resetPlan();
resetQuarantine();
resetWatch();
resetReports();

(async () => {
  const token = sessionStorage.getItem(STORAGE_KEY);
  if (token === null) {
    $('login-token').focus();
    return;
  }
  // No sign-in form flashing up while the stored token is checked: it is shown again only if that fails.
  $('login').hidden = true;
  $('signin-checking').hidden = false;
  try {
    await signIn(token);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      signOut('The stored admin token is no longer accepted. Sign in again.');
    else {
      $('login').hidden = false;
      showLoginError(describe(err));
    }
  } finally {
    $('signin-checking').hidden = true;
  }
})();
