// The admin page: plain DOM, fed only by the admin API. Data reaches the DOM through textContent
// and setAttribute only, never as markup.
'use strict';

const STORAGE_KEY = 'tg-ingest.adminToken';
/** The project this tab had open last, so a reload or a new sign-in comes back to it. */
const PROJECT_KEY = 'tg-ingest.projectId';
const LIVE_MS = 3000;
/** The revenue report reads every payment of the project, so it comes every SLOW_EVERY rounds only. */
const SLOW_EVERY = 10;
const SVG_NS = 'http://www.w3.org/2000/svg';
const MESSENGER_ID = /^[1-9][0-9]{0,18}$/;

const state = {
  projects: [],
  projectId: null,
  bots: [],
  /** The bot whose token dialog is open. */
  dialogBot: null,
  /** The refresh loop: its pending timeout, its round count, and its generation (see stopLive). */
  timer: null,
  ticks: 0,
  loop: 0,
  /** The stored tracking plan (null: none) and the editor text it was shown as, to tell unsaved edits. */
  plan: null,
  planText: '',
  /** The quarantine view; see resetQuarantine. */
  q: null,
  /** The live event stream; see resetWatch. */
  watch: null,
};

const $ = (id) => document.getElementById(id);

/** el('td', {class: 'x', 'data-testid': 'y'}, 'text', child) — strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  for (const c of children) if (c !== null && c !== undefined) node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

const fmt = (n) => (typeof n === 'number' ? n.toLocaleString() : String(n));
const fmtTime = (iso) => new Date(iso).toLocaleString();
const timeEl = (iso) => el('time', { datetime: iso }, fmtTime(iso));
const hhmm = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

// ---------------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    /** The error body's `details` (e.g. ajv's message for a tracking plan), or null. */
    this.details = details ?? null;
  }
}

async function api(method, path, body, token = sessionStorage.getItem(STORAGE_KEY)) {
  const headers = { authorization: `Bearer ${token ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network', 'Cannot reach the service. Check the connection and try again.');
  }
  const text = await res.text();
  let data = null;
  try {
    data = text === '' ? null : JSON.parse(text);
  } catch {
    data = null;
  }
  if (!res.ok) {
    const code = data && typeof data.error === 'string' ? data.error : `http_${res.status}`;
    const message = data && typeof data.message === 'string' ? data.message : `The service answered ${res.status}.`;
    const details = data && typeof data.details === 'object' ? data.details : null;
    throw new ApiError(res.status, code, message, details);
  }
  return data;
}

/** Runs an action with its button disabled; reports errors in the flash area (or `onError`). */
async function busy(button, work, onError) {
  if (button) button.disabled = true;
  try {
    return await work();
  } catch (err) {
    if (isSignedOutError(err)) return undefined;
    if (onError) onError(err);
    else flash(describe(err), 'error');
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

const CODE_TEXT = {
  messenger_bot_id_taken: 'Another bot already has this messenger bot id.',
  not_found: 'It no longer exists (was it deleted?).',
};

function describe(err) {
  if (!(err instanceof ApiError)) return `Unexpected error: ${err && err.message ? err.message : String(err)}`;
  return CODE_TEXT[err.code] ?? err.message;
}

/** A 401 mid-session means the admin token was changed: sign out and say so. */
function isSignedOutError(err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut('The admin token is no longer accepted. Sign in again.');
    return true;
  }
  return false;
}

let flashTimer = null;
function flash(message, kind = 'info') {
  const box = $('flash');
  box.textContent = message;
  box.className = `flash ${kind}`;
  box.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => {
    box.hidden = true;
  }, kind === 'error' ? 12000 : 5000);
}

// ---------------------------------------------------------------------------------------------
// Sign-in

function showLoginError(message) {
  const p = $('login-error');
  p.textContent = message;
  p.hidden = message === '';
}

async function signIn(token) {
  const projects = await api('GET', '/admin/projects', undefined, token);
  sessionStorage.setItem(STORAGE_KEY, token);
  showLoginError('');
  $('login').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  state.projects = projects;
  renderProjects();
  const wanted = /^#project=([0-9a-f-]{36})$/i.exec(location.hash);
  const remembered = sessionStorage.getItem(PROJECT_KEY);
  const byId = (id) => (id ? projects.find((p) => p.projectId === id.toLowerCase()) : undefined);
  // A link names a project on purpose; else the one this tab had open; a lone project needs no choosing.
  const initial = byId(wanted && wanted[1]) ?? byId(remembered) ?? (projects.length === 1 ? projects[0] : undefined);
  if (remembered !== null && !byId(remembered)) sessionStorage.removeItem(PROJECT_KEY);
  if (initial) selectProject(initial.projectId);
}

function signOut(message = '') {
  sessionStorage.removeItem(STORAGE_KEY);
  stopLive();
  // The socket signed in with the token: it must not outlive the session.
  resetWatch();
  resetQuarantine();
  resetPlan();
  const dialog = $('token-dialog');
  if (dialog.open) dialog.close();
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

$('login-form').addEventListener('submit', async (e) => {
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
});

$('sign-out').addEventListener('click', () => signOut());

// ---------------------------------------------------------------------------------------------
// Projects

const allowanceText = (a) => (a === null || a === undefined ? 'unlimited' : `${fmt(a)} events / month`);

function renderProjects() {
  const list = $('project-list');
  list.replaceChildren(
    ...state.projects.map((p) => {
      const button = el(
        'button',
        { type: 'button', class: 'project-button', 'data-testid': 'project-select', 'aria-current': p.projectId === state.projectId ? 'true' : undefined },
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

function currentProject() {
  return state.projects.find((p) => p.projectId === state.projectId) ?? null;
}

function selectProject(projectId) {
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
  state.bots = [];
  renderBots();
  loadBots();
  loadPlan();
  loadQuarantine();
  startLive();
}

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

async function loadUsage() {
  const projectId = state.projectId;
  try {
    const u = await api('GET', `/admin/projects/${projectId}/usage`);
    if (projectId === state.projectId) renderUsage(u);
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Usage: ${describe(err)}`, 'error');
  }
}

function renderUsage(u) {
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

// ---------------------------------------------------------------------------------------------
// Bots

async function loadBots() {
  const projectId = state.projectId;
  try {
    const bots = await api('GET', `/admin/projects/${projectId}/bots`);
    if (projectId !== state.projectId) return;
    state.bots = bots;
    renderBots();
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Bots: ${describe(err)}`, 'error');
  }
}

const botLabel = (b) => b.name || 'Unnamed bot';

function replaceBot(bot) {
  state.bots = state.bots.map((b) => (b.botId === bot.botId ? bot : b));
}

function renderBots() {
  const body = $('bots-body');
  body.replaceChildren(...state.bots.map(botRow));
  $('bots-empty').hidden = state.bots.length > 0 || state.projectId === null;
}

function botRow(b) {
  const label = botLabel(b);

  // Messenger bot id: a small form per row, so Enter saves it.
  const idInput = el('input', {
    value: b.messengerBotId === null ? '' : String(b.messengerBotId),
    inputmode: 'numeric',
    pattern: '[1-9][0-9]{0,18}',
    autocomplete: 'off',
    placeholder: 'not set',
    'aria-label': `Messenger bot id of ${label}`,
    'data-testid': 'bot-messenger-id-input',
  });
  const idSave = el('button', { type: 'submit', class: 'secondary', 'data-testid': 'bot-messenger-id-save' }, 'Save');
  const idForm = el('form', { class: 'row', novalidate: true }, idInput, idSave);
  idForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const raw = idInput.value.trim();
    if (raw !== '' && !MESSENGER_ID.test(raw)) {
      flash('A messenger bot id is a positive whole number (up to 19 digits), or empty to unset it.', 'error');
      idInput.focus();
      return;
    }
    await busy(idSave, async () => {
      const bot = await api('PATCH', `/admin/bots/${b.botId}`, { messengerBotId: raw === '' ? null : raw });
      replaceBot(bot);
      idInput.value = bot.messengerBotId === null ? '' : String(bot.messengerBotId);
      flash(bot.messengerBotId === null ? `Messenger bot id of ${label} unset.` : `Messenger bot id of ${label} saved.`);
    });
  });

  const tokens = el('button', { type: 'button', class: 'secondary', 'data-testid': 'bot-tokens', 'aria-haspopup': 'dialog' }, 'Manage tokens');
  tokens.addEventListener('click', () => openTokens(b.botId));

  return el(
    'tr',
    { 'data-testid': 'bot-row', 'data-bot-id': b.botId },
    el('td', { 'data-label': 'Bot' }, el('span', { class: 'name' }, label), el('br'), el('span', { class: 'muted mono small' }, b.botId)),
    el('td', { 'data-label': 'Messenger bot id' }, idForm),
    el('td', { 'data-label': 'Mini-app ingest' }, toggle(b, 'miniAppIngest', `Mini-app ingest for ${label}`)),
    el('td', { 'data-label': 'API ingest' }, toggle(b, 'apiIngest', `API ingest for ${label}`)),
    el('td', { 'data-label': 'Tokens' }, tokens),
  );
}

/** A checkbox with role=switch; the PATCH decides the final state, a failure puts it back. */
function toggle(b, field, ariaLabel) {
  const input = el('input', { type: 'checkbox', role: 'switch', class: 'switch', 'aria-label': ariaLabel, 'data-testid': `toggle-${field}` });
  input.checked = b[field];
  const stateText = el('span', { class: 'switch-state', 'aria-hidden': 'true' }, b[field] ? 'on' : 'off');
  input.addEventListener('change', async () => {
    const wanted = input.checked;
    input.disabled = true;
    input.setAttribute('aria-busy', 'true');
    try {
      const bot = await api('PATCH', `/admin/bots/${b.botId}`, { [field]: wanted });
      replaceBot(bot);
      input.checked = bot[field];
      flash(`${ariaLabel}: ${bot[field] ? 'on' : 'off'}.`);
    } catch (err) {
      input.checked = !wanted;
      if (!isSignedOutError(err)) flash(describe(err), 'error');
    } finally {
      stateText.textContent = input.checked ? 'on' : 'off';
      input.disabled = false;
      input.removeAttribute('aria-busy');
    }
  });
  return el('label', { class: 'switch-label' }, input, stateText);
}

$('bot-create-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = $('bot-name').value.trim();
  const messengerBotId = $('bot-messenger-id').value.trim();
  if (messengerBotId !== '' && !MESSENGER_ID.test(messengerBotId)) {
    flash('A messenger bot id is a positive whole number (up to 19 digits).', 'error');
    $('bot-messenger-id').focus();
    return;
  }
  const projectId = state.projectId;
  const body = { projectId };
  if (name !== '') body.name = name;
  if (messengerBotId !== '') body.messengerBotId = messengerBotId;
  await busy(e.submitter, async () => {
    const { bot } = await api('POST', '/admin/bots', body);
    e.target.reset();
    if (projectId === state.projectId) {
      state.bots.push(bot);
      renderBots();
    }
    flash(`Bot “${botLabel(bot)}” created; both switches are on. Create a token for it with “Manage tokens”.`);
  });
});

// ---------------------------------------------------------------------------------------------
// Token dialog

function openTokens(botId) {
  const bot = state.bots.find((b) => b.botId === botId);
  if (!bot) return;
  state.dialogBot = bot;
  $('token-dialog-title').textContent = `Tokens of ${botLabel(bot)}`;
  $('token-dialog-bot').textContent = `bot ${bot.botId}`;
  hideNewToken();
  tokenError('');
  $('token-body').replaceChildren();
  $('token-empty').hidden = true;
  $('token-dialog').showModal();
  loadTokens();
}

function hideNewToken() {
  // The value is shown once: it leaves the DOM as soon as the dialog closes or another is made.
  $('token-new-value').value = '';
  $('token-copy-status').textContent = '';
  $('token-new').hidden = true;
}

function tokenError(message) {
  $('token-error').textContent = message;
  $('token-error').hidden = message === '';
}

async function loadTokens() {
  const bot = state.dialogBot;
  if (!bot) return;
  try {
    const tokens = await api('GET', `/admin/bots/${bot.botId}/tokens`);
    if (bot !== state.dialogBot) return;
    $('token-body').replaceChildren(...tokens.map(tokenRow));
    $('token-empty').hidden = tokens.length > 0;
  } catch (err) {
    if (!isSignedOutError(err)) tokenError(describe(err));
  }
}

function tokenRow(t) {
  const revoked = t.revokedAt !== null;
  const actions = el('td', { class: 'actions' });
  if (!revoked) showRevoke(actions, t);
  return el(
    'tr',
    { 'data-testid': 'token-row', 'data-token-id': t.tokenId, 'data-revoked': revoked ? 'true' : 'false' },
    el('td', { class: 'mono', 'data-label': 'Hint' }, t.hint),
    el('td', { 'data-label': 'Created' }, timeEl(t.createdAt)),
    el('td', { 'data-testid': 'token-status', 'data-label': 'Status' }, revoked ? el('span', { class: 'badge off' }, 'revoked ', timeEl(t.revokedAt)) : el('span', { class: 'badge on' }, 'active')),
    actions,
  );
}

// Revoking is final, so it takes a second, explicit click (no native confirm(): it blocks and is hard to style).
function showRevoke(cell, t) {
  const revoke = el('button', { type: 'button', class: 'danger', 'data-testid': 'token-revoke', 'aria-label': `Revoke token ${t.hint}` }, 'Revoke');
  revoke.addEventListener('click', () => {
    const confirm = el('button', { type: 'button', class: 'danger', 'data-testid': 'token-revoke-confirm' }, 'Yes, revoke');
    const cancel = el('button', { type: 'button', class: 'secondary', 'data-testid': 'token-revoke-cancel' }, 'Cancel');
    cancel.addEventListener('click', () => showRevoke(cell, t));
    confirm.addEventListener('click', () =>
      busy(confirm, async () => {
        await api('DELETE', `/admin/tokens/${t.tokenId}`);
        flash(`Token ${t.hint} revoked.`);
        await loadTokens();
      }, (err) => tokenError(describe(err))),
    );
    cell.replaceChildren(el('span', { class: 'small' }, 'Revoke? '), confirm, cancel);
    confirm.focus();
  });
  cell.replaceChildren(revoke);
}

$('token-create').addEventListener('click', (e) => {
  const bot = state.dialogBot;
  if (!bot) return;
  tokenError('');
  busy(e.currentTarget, async () => {
    const created = await api('POST', `/admin/bots/${bot.botId}/tokens`);
    if (bot !== state.dialogBot) return;
    const input = $('token-new-value');
    input.value = created.token;
    $('token-copy-status').textContent = '';
    $('token-new').hidden = false;
    input.focus();
    input.select();
    await loadTokens();
  }, (err) => tokenError(describe(err)));
});

$('token-copy').addEventListener('click', async () => {
  const input = $('token-new-value');
  const status = $('token-copy-status');
  try {
    if (!navigator.clipboard) throw new Error('no clipboard API');
    await navigator.clipboard.writeText(input.value);
    status.textContent = 'Copied to the clipboard.';
  } catch {
    // No clipboard permission (or an insecure origin): select the text so the user can copy it.
    input.focus();
    input.select();
    let copied = false;
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
    status.textContent = copied ? 'Copied to the clipboard.' : 'Selected: press Ctrl+C (⌘C on a Mac) to copy.';
  }
});

$('token-dialog-close').addEventListener('click', () => $('token-dialog').close());
$('token-dialog').addEventListener('close', () => {
  hideNewToken();
  const botId = state.dialogBot && state.dialogBot.botId;
  state.dialogBot = null;
  // Back to the button that opened the dialog (the table may have been re-rendered meanwhile).
  const row = botId && [...$('bots-body').querySelectorAll('tr')].find((r) => r.dataset.botId === botId);
  if (row) row.querySelector('[data-testid="bot-tokens"]').focus();
});

// ---------------------------------------------------------------------------------------------
// Confirmations

/**
 * A destructive action behind a second, explicit click in place, as for revoking a token: `slot`
 * holds the button; a click turns it into the question with "yes" and "Cancel". Returns the
 * function that draws the button again (its label and state follow the view).
 */
function confirmable(slot, o) {
  const show = () => {
    const button = el('button', { type: 'button', class: 'danger', 'data-testid': o.testid }, o.label());
    button.disabled = o.disabled();
    button.addEventListener('click', () => {
      const yes = el('button', { type: 'button', class: 'danger', 'data-testid': `${o.testid}-confirm` }, o.yes);
      const no = el('button', { type: 'button', class: 'secondary', 'data-testid': `${o.testid}-cancel` }, 'Cancel');
      no.addEventListener('click', () => {
        show();
        slot.querySelector('button').focus();
      });
      yes.addEventListener('click', async () => {
        no.disabled = true;
        await busy(yes, o.run, o.onError);
        show();
      });
      slot.replaceChildren(el('span', { class: 'small question' }, o.question()), yes, no);
      yes.focus();
    });
    slot.replaceChildren(button);
  };
  show();
  return show;
}

// ---------------------------------------------------------------------------------------------
// Tracking plan

/** What the editor offers when the project has no plan: the loosest plan, which changes nothing. */
const PLAN_TEMPLATE = { mode: 'warn', unplannedEvents: 'allow', events: {} };

const planTextOf = (p) => JSON.stringify({ mode: p.mode, unplannedEvents: p.unplannedEvents, events: p.events }, null, 2);

function resetPlan() {
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

async function loadPlan() {
  const projectId = state.projectId;
  $('plan-status').textContent = 'Loading the tracking plan…';
  let plan = null;
  try {
    plan = await api('GET', `/admin/projects/${projectId}/tracking-plan`);
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

/** Says next to the editor why a plan was refused (null: clears it); `select` puts the caret on the culprit. */
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

/** The editor's text as a plan, or null after saying why it is not one: then nothing is sent. */
function parsePlanText(whatNot) {
  const text = $('plan-text').value;
  let plan;
  try {
    plan = JSON.parse(text);
  } catch (err) {
    // V8 gives the offset ("… at position 12 (line 2 column 3)"): the caret goes there.
    const m = /position (\d+)/.exec(err.message);
    const at = m ? Math.min(Number(m[1]), text.length) : null;
    planError(`This is not valid JSON; ${whatNot}.`, err.message, at === null ? null : [at, at]);
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

/** Where the text has `name` as a key ("name": …), to point at the schema ajv refused. */
function keyRange(text, name) {
  const quoted = JSON.stringify(name);
  for (let i = text.indexOf(quoted); i !== -1; i = text.indexOf(quoted, i + 1)) {
    if (/^\s*:/.test(text.slice(i + quoted.length, i + quoted.length + 40))) return [i, i + quoted.length];
  }
  return null;
}

/** The part of a 400's details worth showing beside its message: ajv's own words, or the values allowed. */
function planErrorDetail(err) {
  const d = err.details;
  if (d === null) return '';
  if (typeof d.error === 'string') return d.error;
  const first = Array.isArray(d.errors) ? d.errors[0] : null;
  if (first && first.params && Array.isArray(first.params.allowedValues)) return `Allowed: ${first.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return '';
}

$('plan-text').addEventListener('input', renderPlanDirty);

$('plan-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const plan = parsePlanText('nothing was sent');
  if (plan === null) return;
  const projectId = state.projectId;
  await busy(e.submitter ?? $('plan-save'), async () => {
    const stored = await api('PUT', `/admin/projects/${projectId}/tracking-plan`, plan);
    if (projectId !== state.projectId) return;
    planError(null);
    showPlan(stored);
    // A dry run on screen was worked out under the old plan.
    hidePreview();
    const waiting = state.q.items.length > 0 ? ' Events already in quarantine are checked again only when you replay them.' : '';
    flash(`Tracking plan saved: version ${stored.version}. It applies to events from now on.${waiting}`);
  }, (err) => {
    if (projectId !== state.projectId) return;
    if (!(err instanceof ApiError && err.status === 400)) {
      planError(describe(err));
      return;
    }
    const detail = planErrorDetail(err);
    const name = err.details && typeof err.details.eventName === 'string' ? err.details.eventName : null;
    // The message usually quotes ajv already; the detail is shown only when it adds something.
    planError(err.message, err.message.includes(detail) ? '' : detail, name === null ? null : keyRange($('plan-text').value, name));
  });
});

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

const showPlanDelete = confirmable($('plan-delete-slot'), {
  testid: 'plan-delete',
  label: () => 'Delete plan',
  disabled: () => state.plan === null,
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

// ---------------------------------------------------------------------------------------------
// Quarantine

const Q_PAGE = 50;
/** The most one replay request takes, oldest first (REPLAY_MAX of the service). */
const REPLAY_MAX = 10000;

const quarantinePath = (projectId, rest = '') => `/admin/projects/${projectId}/quarantine${rest}`;

function quarantineQuery(code, before) {
  const q = new URLSearchParams({ limit: String(Q_PAGE) });
  if (code !== null) q.set('code', code);
  if (before !== undefined) q.set('before', String(before));
  return `?${q}`;
}

/** A fresh view; its generation goes up, so answers still on their way for the old one are dropped. */
function resetQuarantine() {
  const gen = state.q === null ? 0 : state.q.gen + 1;
  state.q = { code: null, summary: [], items: [], next: null, loaded: false, selected: new Set(), detailId: null, preview: null, gen };
  $('replay-result').hidden = true;
  quarantineError('');
  renderQuarantine();
}

function quarantineError(message) {
  $('quarantine-error').textContent = message;
  $('quarantine-error').hidden = message === '';
}

/** The summary and the first page under the current filter. */
async function loadQuarantine() {
  const projectId = state.projectId;
  const q = state.q;
  if (projectId === null || q === null) return;
  const gen = ++q.gen;
  try {
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
    if (!isSignedOutError(err) && q === state.q && gen === q.gen) quarantineError(`The quarantine could not be loaded: ${describe(err)}`);
  }
}

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
  $('quarantine-filter').textContent = q.code === null ? 'Showing every quarantined event, newest first.' : `Showing the events with the code ${q.code}, newest first.`;
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
  const chip = (code, ...content) => {
    const b = el(
      'button',
      { type: 'button', class: 'chip', 'data-testid': code === null ? 'quarantine-code-all' : 'quarantine-code', 'data-code': code ?? undefined, 'aria-pressed': q.code === code ? 'true' : 'false' },
      ...content,
    );
    b.addEventListener('click', () => setQuarantineFilter(code));
    return el('li', {}, b);
  };
  $('quarantine-summary').replaceChildren(
    chip(null, 'All'),
    ...counts.map((s) => chip(s.code, el('code', {}, s.code), ' ', el('span', { class: 'count', 'data-testid': 'quarantine-code-count' }, fmt(s.count)))),
  );
}

function eventNameOf(item) {
  const e = item.event;
  return e !== null && typeof e === 'object' && !Array.isArray(e) && typeof e.eventName === 'string' ? e.eventName : null;
}

/** Each code once with its first message, errors (the reasons an event was refused) before warnings. */
function codesOf(diagnostics) {
  const seen = new Map();
  for (const d of Array.isArray(diagnostics) ? diagnostics : []) {
    if (!d || typeof d.code !== 'string') continue;
    const had = seen.get(d.code);
    if (!had || (had.severity !== 'error' && d.severity === 'error')) seen.set(d.code, { code: d.code, severity: d.severity, message: had ? had.message : String(d.message ?? '') });
  }
  return [...seen.values()].sort((a, b) => (a.severity === 'error' ? 0 : 1) - (b.severity === 'error' ? 0 : 1));
}

function codeList(diagnostics) {
  const codes = codesOf(diagnostics);
  if (codes.length === 0) return el('span', { class: 'muted' }, '—');
  return el(
    'span',
    { class: 'codes' },
    ...codes.map((c) => el('code', { class: `code ${c.severity === 'error' ? 'error' : 'warning'}`, title: c.message }, c.code, c.severity === 'error' ? null : el('span', { class: 'sr-only' }, ' (warning)'))),
  );
}

function quarantineRow(item) {
  const q = state.q;
  const label = item.eventId ?? `#${item.id}`;
  const name = eventNameOf(item);
  const select = el('input', { type: 'checkbox', 'data-testid': 'quarantine-select', 'aria-label': `Select event ${label} for replay` });
  select.checked = q.selected.has(item.id);
  select.addEventListener('change', () => {
    if (select.checked) q.selected.add(item.id);
    else q.selected.delete(item.id);
    // A dry run on screen was for another set of events.
    hidePreview();
    renderReplayButton();
  });
  const current = q.detailId === item.id;
  const view = el('button', { type: 'button', class: 'link mono', 'data-testid': 'quarantine-view', 'aria-controls': 'quarantine-detail', 'aria-expanded': current ? 'true' : 'false' }, label);
  view.addEventListener('click', () => showDetail(item.id));
  return el(
    'tr',
    { 'data-testid': 'quarantine-row', 'data-id': item.id, 'data-event-id': item.eventId ?? undefined, class: current ? 'current' : undefined },
    el('td', { class: 'select', 'data-label': 'Replay' }, select),
    el('td', { 'data-label': 'Received' }, timeEl(item.receivedAt)),
    el('td', { 'data-label': 'Event id' }, view),
    el('td', { 'data-label': 'Event', 'data-testid': 'quarantine-name' }, name ?? (item.truncated ? el('span', { class: 'badge warn' }, 'truncated') : el('span', { class: 'muted' }, '—'))),
    el('td', { 'data-label': 'Channel' }, item.channel),
    el('td', { 'data-label': 'Codes', 'data-testid': 'quarantine-codes' }, codeList(item.diagnostics)),
  );
}

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
  $('quarantine-detail-meta').textContent = [`received ${fmtTime(item.receivedAt)}`, item.channel, `bot ${item.botId}`, item.userId === null ? null : `user ${item.userId}`]
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

$('quarantine-detail-close').addEventListener('click', () => {
  const id = state.q.detailId;
  state.q.detailId = null;
  renderQuarantine();
  const row = [...$('quarantine-body').rows].find((r) => Number(r.dataset.id) === id);
  if (row) row.querySelector('[data-testid="quarantine-view"]').focus();
});

$('quarantine-more').addEventListener('click', (e) => {
  const q = state.q;
  const projectId = state.projectId;
  const gen = q.gen;
  busy(e.currentTarget, async () => {
    const page = await api('GET', quarantinePath(projectId, quarantineQuery(q.code, q.next)));
    if (q !== state.q || gen !== q.gen) return;
    const first = q.items.length;
    q.items = q.items.concat(page.items);
    q.next = page.next;
    renderQuarantine();
    // The button may be gone now (the last page): keep the keyboard where the new rows start.
    const row = $('quarantine-body').rows[first];
    if (row && q.next === null) row.querySelector('[data-testid="quarantine-view"]').focus();
  }, (err) => quarantineError(describe(err)));
});

$('quarantine-refresh').addEventListener('click', (e) => {
  hidePreview();
  busy(e.currentTarget, loadQuarantine);
});

/** What a replay takes: the rows ticked, else every event under the current filter. */
function replayScope() {
  const q = state.q;
  const n = q.selected.size;
  if (n > 0) return { body: { ids: [...q.selected] }, text: `the ${n} selected ${n === 1 ? 'event' : 'events'}`, label: `Replay ${n} selected…` };
  if (q.code !== null) return { body: { code: q.code }, text: `the events with the code ${q.code}`, label: `Replay all with ${q.code}…` };
  return { body: {}, text: 'all quarantined events', label: 'Replay all…' };
}

function renderReplayButton() {
  const b = $('quarantine-replay');
  b.textContent = replayScope().label;
  b.disabled = state.q.items.length === 0;
}

function hidePreview() {
  if (state.q !== null) state.q.preview = null;
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
  for (const [id, value] of [['replay-accepted', r.accepted], ['replay-rejected', r.stillRejected], ['replay-duplicated', r.duplicated]]) {
    const dd = $('replay-preview').querySelector(`[data-testid="${id}"]`);
    dd.textContent = fmt(value);
    dd.dataset.value = String(value);
  }
  $('replay-preview-note').textContent =
    '“Replay now” stores the accepted events (billed as usual) and takes them and the duplicated ones out of quarantine; the others stay, with their new reasons.' +
    (r.replayed >= REPLAY_MAX ? ` One replay takes the oldest ${fmt(REPLAY_MAX)}; replay again for the rest.` : '');
  $('replay-confirm').disabled = r.replayed === 0;
}

// Replay stores and bills: it always shows a dry run first, and runs only on a second, explicit click.
$('quarantine-replay').addEventListener('click', (e) => {
  const q = state.q;
  const projectId = state.projectId;
  const scope = replayScope();
  $('replay-result').hidden = true;
  quarantineError('');
  busy(e.currentTarget, async () => {
    const result = await api('POST', quarantinePath(projectId, '/replay'), { ...scope.body, dryRun: true });
    if (q !== state.q) return;
    q.preview = { projectId, scope, result };
    renderPreview();
    (result.replayed === 0 ? $('replay-cancel') : $('replay-confirm')).focus();
  }, (err) => quarantineError(describe(err)));
});

$('replay-confirm').addEventListener('click', (e) => {
  const q = state.q;
  const p = q.preview;
  if (p === null) return;
  busy(e.currentTarget, async () => {
    const r = await api('POST', quarantinePath(p.projectId, '/replay'), p.scope.body);
    if (q !== state.q) return;
    hidePreview();
    q.selected.clear();
    const result = $('replay-result');
    result.textContent = `Replayed ${fmt(r.replayed)}: ${fmt(r.accepted)} accepted and stored, ${fmt(r.stillRejected)} still rejected, ${fmt(r.duplicated)} duplicated.`;
    result.hidden = false;
    $('quarantine-replay').focus();
    await Promise.all([loadQuarantine(), loadUsage()]);
  }, (err) => quarantineError(describe(err)));
});

$('replay-cancel').addEventListener('click', () => {
  hidePreview();
  $('quarantine-replay').focus();
});

const showQuarantineDelete = confirmable($('quarantine-delete-slot'), {
  testid: 'quarantine-delete',
  label: () => (state.q !== null && state.q.code !== null ? `Delete all with ${state.q.code}…` : 'Delete all…'),
  disabled: () => state.q === null || state.q.items.length === 0,
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

// ---------------------------------------------------------------------------------------------
// Live events: a WebSocket per viewer, opened on request

/** Rows the table keeps (older ones drop off the bottom), and the most held back while paused. */
const WATCH_MAX_ROWS = 500;
/** A tab hidden this long closes its stream: nobody reads it, and the service describes events for it. */
const WATCH_HIDDEN_MS = 60_000;

function resetWatch() {
  closeWatch();
  state.watch = { ws: null, paused: false, held: [], heldCount: 0, skipped: 0, hiddenTimer: null };
  $('watch-body').replaceChildren();
  $('watch-filter').value = '';
  renderWatchToggle();
  renderWatchCounts();
  watchStatus('Not watching.');
}

function watchStatus(text) {
  $('watch-status').textContent = text;
}

/** Same origin, so the page's connect-src 'self' covers it. */
function watchUrl(projectId) {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/admin/live?projectId=${encodeURIComponent(projectId)}`;
}

function openWatch() {
  const w = state.watch;
  closeWatch();
  const projectId = state.projectId;
  const token = sessionStorage.getItem(STORAGE_KEY);
  let ws = null;
  try {
    if (projectId !== null && token !== null) ws = new WebSocket(watchUrl(projectId));
  } catch (err) {
    watchStatus(`The live view could not be opened: ${err.message}`);
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
  ws.addEventListener('open', () => ws.send(JSON.stringify({ token })));
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

function closeReason(code) {
  if (code === 4029) return 'Refused: too many failed sign-ins from this address. Wait a while, then turn “Watch live” on again.';
  if (code === 1001) return 'The service closed the stream (it may be restarting). Turn “Watch live” on again to reconnect.';
  return `The stream closed (code ${code}). Turn “Watch live” on again to reconnect.`;
}

/** Ends the stream on purpose (switch off, another project, sign-out, a long-hidden tab); the table stays. */
function closeWatch(status) {
  const w = state.watch;
  if (w === null) return;
  clearTimeout(w.hiddenTimer);
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

function onWatchMessage(w, data) {
  let m;
  try {
    m = JSON.parse(data);
  } catch {
    return;
  }
  if (m === null || typeof m !== 'object') return;
  if (m.type === 'ready') {
    watchStatus(`Watching: each event of this project as this instance answers it, at most ${fmt(m.perSecond)} a second.`);
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
const watchMatches = (row, f) => f === '' || row.dataset.match.includes(f);

/** `messages` oldest first; the newest ends on top. */
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

function watchRow(m) {
  const status = WATCH_STATUSES.has(m.status) ? m.status : 'unknown';
  const name = typeof m.eventName === 'string' ? m.eventName : null;
  const text = (v) => (typeof v === 'string' ? v : el('span', { class: 'muted' }, '—'));
  const row = el(
    'tr',
    { 'data-testid': 'watch-row', 'data-status': status, 'data-event-id': typeof m.eventId === 'string' ? m.eventId : undefined },
    el('td', { 'data-label': 'Time' }, typeof m.receivedAt === 'string' ? el('time', { datetime: m.receivedAt }, new Date(m.receivedAt).toLocaleTimeString()) : text(null)),
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
  const rows = [...$('watch-body').rows];
  const f = watchFilter();
  const shown = $('watch-shown');
  const visible = f === '' ? rows.length : rows.filter((r) => !r.hidden).length;
  shown.dataset.total = String(rows.length);
  shown.dataset.visible = String(visible);
  shown.textContent =
    rows.length === 0 ? '' : f === '' ? `${fmt(rows.length)} in the table (the newest ${WATCH_MAX_ROWS} are kept).` : `${fmt(visible)} of ${fmt(rows.length)} match the filter.`;
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

$('watch-toggle').addEventListener('change', (e) => {
  if (e.currentTarget.checked) openWatch();
  else closeWatch('Not watching. The table keeps what it showed.');
});

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
  if (w === null) return;
  clearTimeout(w.hiddenTimer);
  w.hiddenTimer = null;
  if (document.hidden && w.ws !== null) {
    w.hiddenTimer = setTimeout(() => closeWatch('Stopped: the tab was hidden for a minute. Turn “Watch live” on again to go on watching.'), WATCH_HIDDEN_MS);
  }
});

// ---------------------------------------------------------------------------------------------
// Live view, usage and revenue

// One loop feeds the live view and the usage card together, so the two never tell different
// moments. A round is scheduled only once the previous one has answered: a slow service gets no
// pile of requests, and there is no second timer to drift.
function startLive() {
  stopLive();
  state.ticks = 0;
  if (!document.hidden && state.projectId !== null) tick(state.loop);
}

/** Bumping the generation also ends a round still waiting for its answers: it schedules no next one. */
function stopLive() {
  clearTimeout(state.timer);
  state.timer = null;
  state.loop++;
}

async function tick(loop) {
  const projectId = state.projectId;
  const slow = state.ticks++ % SLOW_EVERY === 0;
  const [stats, usage] = await Promise.allSettled([
    api('GET', `/admin/projects/${projectId}/stats`),
    api('GET', `/admin/projects/${projectId}/usage`),
    slow ? loadRevenue() : undefined,
  ]);
  if (loop !== state.loop) return;
  if (stats.status === 'fulfilled') renderStats(stats.value);
  if (usage.status === 'fulfilled') renderUsage(usage.value);
  const failed = [stats, usage].find((r) => r.status === 'rejected');
  if (failed && isSignedOutError(failed.reason)) return;
  $('live-updated').textContent = failed ? `Not updated: ${describe(failed.reason)}` : `Updated ${new Date().toLocaleTimeString()}`;
  // A project that is gone will not come back: asking every 3 s would only repeat the 404.
  if (failed && failed.reason instanceof ApiError && failed.reason.status === 404) return;
  state.timer = setTimeout(() => tick(loop), LIVE_MS);
}

// A hidden tab asks nothing; on its return the loop starts over at once (revenue included).
document.addEventListener('visibilitychange', () => {
  if (document.hidden) stopLive();
  else if (state.projectId !== null) startLive();
});

const STAT_KEYS = ['accepted', 'rejected', 'duplicated', 'storedNotBilled', 'redelivered'];

function resetLive() {
  for (const k of STAT_KEYS) setStat(k, 0);
  $('chart').replaceChildren();
  for (const id of ['chart-max', 'chart-start', 'chart-end']) $(id).textContent = '';
  $('top-diagnostics').replaceChildren();
  $('top-diagnostics-empty').hidden = false;
  $('live-updated').textContent = '';
  $('live-since').textContent = '';
  $('revenue-body').replaceChildren();
  $('revenue-empty').hidden = false;
  for (const id of ['usage-month', 'usage-billed', 'usage-stored', 'usage-allowance']) {
    const dd = $('usage').querySelector(`[data-testid="${id}"]`);
    dd.textContent = '–';
    delete dd.dataset.value;
  }
}

function setStat(key, value) {
  const dd = document.querySelector(`[data-testid="stat-${key}"]`);
  dd.dataset.value = String(value);
  dd.textContent = fmt(value);
}

function renderStats(s) {
  for (const k of STAT_KEYS) setStat(k, s.totals[k] ?? 0);
  $('live-since').textContent = `Totals since this instance started, ${fmtTime(s.since)}.`;
  renderChart(s.minutes);
  const diags = $('top-diagnostics');
  diags.replaceChildren(...s.topDiagnostics.map((d) => el('li', { 'data-code': d.code }, el('code', {}, d.code), ' ', el('span', { class: 'count' }, fmt(d.count)))));
  $('top-diagnostics-empty').hidden = s.topDiagnostics.length > 0;
}

/** Rounds a chart's top up to 1, 2 or 5 × 10^n so the scale does not jitter with every minute. */
function niceCeil(n) {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

const SERIES = ['accepted', 'rejected', 'duplicated'];

function renderChart(minutes) {
  const W = 600, H = 140;
  const slot = W / Math.max(minutes.length, 1);
  const peak = minutes.reduce((m, x) => Math.max(m, x.accepted + x.rejected + x.duplicated), 0);
  const max = niceCeil(peak);
  const scale = H / max;
  const sum = (k) => minutes.reduce((a, x) => a + x[k], 0);

  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart-svg', preserveAspectRatio: 'none' });
  root.setAttribute(
    'aria-label',
    `Events per minute over the last ${minutes.length} minutes: ${sum('accepted')} accepted, ${sum('rejected')} rejected, ${sum('duplicated')} duplicated; peak ${peak} per minute.`,
  );
  root.append(svg('line', { x1: 0, x2: W, y1: 0.5, y2: 0.5, class: 'grid' }), svg('line', { x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5, class: 'axis' }));

  minutes.forEach((m, i) => {
    const g = svg('g', { class: 'bar' });
    const title = svg('title');
    title.textContent = `${hhmm(m.minute)}: ${m.accepted} accepted, ${m.rejected} rejected, ${m.duplicated} duplicated, ${m.storedNotBilled} stored not billed`;
    // A full-height transparent hit area, so even an empty minute shows its tooltip.
    g.append(title, svg('rect', { x: i * slot, y: 0, width: slot, height: H, class: 'hit' }));
    let y = H;
    for (const k of SERIES) {
      if (m[k] === 0) continue;
      const h = Math.max(m[k] * scale, 1);
      y -= h;
      g.append(svg('rect', { x: i * slot + 1, y, width: Math.max(slot - 2, 1), height: h, class: `s-${k}` }));
    }
    root.append(g);
  });
  $('chart').replaceChildren(root);
  $('chart-max').textContent = `${fmt(max)} / min`;
  $('chart-start').textContent = minutes.length > 0 ? hhmm(minutes[0].minute) : '';
  $('chart-end').textContent = minutes.length > 0 ? `${hhmm(minutes[minutes.length - 1].minute)} (now)` : '';
}

/** The messenger's Stars: not an ISO 4217 code, and counted in whole stars. */
const STARS = 'XTR';
/** Codes Intl has data for; it would otherwise format any well-formed code with 2 made-up decimals. */
const KNOWN_CURRENCIES = typeof Intl.supportedValuesOf === 'function' ? new Set(Intl.supportedValuesOf('currency')) : null;

/**
 * A total in the currency's smallest units (a number, or a decimal string beyond 2^53) as money:
 * 1999 USD is $19.99. The split into units and fraction is BigInt arithmetic, so a string loses no
 * digit; Intl only lays the parts out. Stars, unknown and invalid codes read "1,999 XTR".
 */
function formatMoney(amount, currency) {
  const valid = typeof amount === 'number' ? Number.isSafeInteger(amount) : typeof amount === 'string' && /^-?[0-9]+$/.test(amount);
  if (!valid) return `${String(amount)} ${currency}`;
  const minor = BigInt(amount);
  const code = String(currency).toUpperCase();
  const plain = () => `${new Intl.NumberFormat().format(minor)} ${currency}`;
  if (code === STARS || (KNOWN_CURRENCIES !== null && !KNOWN_CURRENCIES.has(code))) return plain();
  let nf, digits;
  try {
    nf = new Intl.NumberFormat(undefined, { style: 'currency', currency: code });
    digits = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits;
  } catch {
    return plain(); // a malformed code is a RangeError
  }
  const scale = 10n ** BigInt(digits);
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const units = abs / scale;
  const fraction = (abs % scale).toString().padStart(digits, '0');
  // Intl formats the whole units exactly (BigInt at any size, -0 keeps the sign of -$0.05); the
  // fraction it would print (always zeros) is replaced by the real digits, in the locale's numerals.
  const digit = new Intl.NumberFormat(undefined, { useGrouping: false });
  return nf
    .formatToParts(negative ? (units === 0n ? -0 : -units) : units)
    .map((part) => (part.type === 'fraction' ? [...fraction].map((d) => digit.format(Number(d))).join('') : part.value))
    .join('');
}

async function loadRevenue() {
  const projectId = state.projectId;
  try {
    const rows = await api('GET', `/admin/projects/${projectId}/reports/revenue`);
    if (projectId !== state.projectId) return;
    $('revenue-body').replaceChildren(
      ...rows.map((r) =>
        el(
          'tr',
          { 'data-testid': 'revenue-row', 'data-currency': r.currency },
          el('td', { class: 'mono' }, r.currency),
          el('td', { class: 'num', 'data-testid': 'revenue-total' }, formatMoney(r.totalAmount, r.currency)),
        ),
      ),
    );
    $('revenue-empty').hidden = rows.length > 0;
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Revenue: ${describe(err)}`, 'error');
  }
}

$('revenue-refresh').addEventListener('click', (e) => busy(e.currentTarget, () => Promise.all([loadRevenue(), loadUsage()])));

// ---------------------------------------------------------------------------------------------
// Start

// Empty views to start from: their handlers can then assume a state.
resetPlan();
resetQuarantine();
resetWatch();

(async () => {
  const token = sessionStorage.getItem(STORAGE_KEY);
  if (token === null) {
    $('login-token').focus();
    return;
  }
  try {
    await signIn(token);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) signOut('The stored admin token is no longer accepted. Sign in again.');
    else showLoginError(describe(err));
  }
})();
