// @ts-check
// The admin page, its entry: each view attaches its listeners (nothing does at import), starts empty, and then the
// stored sign-in is tried. The modules import only downwards: admin → signin → projects → the views (bots, tokens,
// counts, live, plan, quarantine, reports, privacy) → usage, confirm, format → api → core. Type-checked strictly by
// tsconfig.page.json; data reaches the DOM through textContent and setAttribute only.
import { $, STORAGE_KEY } from './core.js';
import { ApiError, describe, signOut } from './api.js';
import { startBots } from './bots.js';
import { startCounts } from './counts.js';
import { resetWatch, startLiveView } from './live.js';
import { resetPlan, startPlan } from './plan.js';
import { resetPrivacy, startPrivacy } from './privacy.js';
import { startProjects } from './projects.js';
import { resetQuarantine, startQuarantine } from './quarantine.js';
import { resetFunnel, startFunnel } from './funnel.js';
import { resetReports, startReports } from './reports.js';
import { showLoginError, signIn, startSignIn } from './signin.js';
import { startTokens } from './tokens.js';

// In the order a sign-out reaches them: the refresh loop and the stream first, the sign-in form last.
startCounts();
startLiveView();
startQuarantine();
startPlan();
startTokens();
startBots();
startProjects();
startReports();
startFunnel();
startPrivacy();
startSignIn();

// Empty views to start from: their handlers can then assume a state.
resetPlan();
resetQuarantine();
resetWatch();
resetReports();
resetFunnel();
resetPrivacy();

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
