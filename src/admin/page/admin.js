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
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
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
    throw new ApiError(res.status, code, message);
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
  state.bots = [];
  renderBots();
  loadBots();
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
