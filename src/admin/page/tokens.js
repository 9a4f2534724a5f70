// @ts-check
// The admin page: the token dialog (issue, list, revoke with a second click).
import { $, botLabel, el, latestOnly, state, timeEl } from './core.js';
import { api, busy, describe, flash, isSignedOutError, onSignOut } from './api.js';

/** @typedef {import('./core.js').TokenSummary} TokenSummary */

/** @param {string} botId */
export function openTokens(botId) {
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

/** @param {string} message */
function tokenError(message) {
  $('token-error').textContent = message;
  $('token-error').hidden = message === '';
}

/** The list asked for on opening the dialog and after each change: the latest wins (it holds a token just made). */
const tokensRequest = latestOnly();

async function loadTokens() {
  const bot = state.dialogBot;
  if (!bot) return;
  const current = tokensRequest();
  try {
    /** @type {TokenSummary[]} */
    const tokens = await api('GET', `/admin/bots/${bot.botId}/tokens`);
    if (bot !== state.dialogBot || !current()) return;
    $('token-body').replaceChildren(...tokens.map(tokenRow));
    $('token-empty').hidden = tokens.length > 0;
  } catch (err) {
    if (!isSignedOutError(err) && bot === state.dialogBot && current()) tokenError(describe(err));
  }
}

/** @param {TokenSummary} t */
function tokenRow(t) {
  const revoked = t.revokedAt !== null;
  const actions = el('td', { class: 'actions' });
  if (!revoked) showRevoke(actions, t);
  return el(
    'tr',
    { 'data-testid': 'token-row', 'data-token-id': t.tokenId, 'data-revoked': revoked ? 'true' : 'false' },
    el('td', { class: 'mono', 'data-label': 'Hint' }, t.hint),
    el('td', { 'data-label': 'Created' }, timeEl(t.createdAt)),
    el(
      'td',
      { 'data-testid': 'token-last-used', 'data-label': 'Last used' },
      t.lastUsedAt === null ? 'never' : timeEl(t.lastUsedAt),
    ),
    limitCell(t, revoked),
    el(
      'td',
      { 'data-testid': 'token-status', 'data-label': 'Status' },
      revoked
        ? el('span', { class: 'badge off' }, 'revoked ', timeEl(/** @type {string} */ (t.revokedAt)))
        : el('span', { class: 'badge on' }, 'active'),
    ),
    actions,
  );
}

/** What a token's bucket is: its own limits, or the service's. @param {TokenSummary} t */
function limitText(t) {
  if (t.rateLimitPerMin === null && t.rateLimitBurst === null) return 'default';
  const perMin = t.rateLimitPerMin === null ? 'default' : `${t.rateLimitPerMin.toLocaleString('en-US')}/min`;
  const burst = t.rateLimitBurst === null ? 'default' : t.rateLimitBurst.toLocaleString('en-US');
  return `${perMin}, burst ${burst}`;
}

/** @param {TokenSummary} t @param {boolean} revoked */
function limitCell(t, revoked) {
  const cell = el('td', { 'data-testid': 'token-limit', 'data-label': 'Rate limit' });
  const show = () => {
    const text = el('span', { 'data-testid': 'token-limit-text' }, limitText(t));
    if (revoked) return cell.replaceChildren(text);
    const edit = el(
      'button',
      {
        type: 'button',
        class: 'secondary small-button',
        'data-testid': 'token-limit-edit',
        'aria-label': `Set the rate limit of token ${t.hint}`,
      },
      'Set',
    );
    edit.addEventListener('click', () => editLimit(cell, t, show));
    cell.replaceChildren(text, ' ', edit);
  };
  show();
  return cell;
}

/**
 * Inline: requests a minute and burst, each empty for the service's default.
 * @param {HTMLElement} cell
 * @param {TokenSummary} t
 * @param {() => void} cancel
 */
function editLimit(cell, t, cancel) {
  /** @param {string} testid @param {string} label @param {number | null} value @returns {HTMLInputElement} */
  const field = (testid, label, value) =>
    el('input', {
      type: 'number',
      min: '1',
      step: '1',
      class: 'limit-input',
      'data-testid': testid,
      'aria-label': label,
      placeholder: 'default',
      value: value === null ? '' : String(value),
    });
  const perMin = field('token-limit-per-min', 'Requests a minute (empty: default)', t.rateLimitPerMin);
  const burst = field('token-limit-burst', 'Burst (empty: default)', t.rateLimitBurst);
  const save = el('button', { type: 'button', 'data-testid': 'token-limit-save' }, 'Save');
  const back = el('button', { type: 'button', class: 'secondary', 'data-testid': 'token-limit-cancel' }, 'Cancel');
  back.addEventListener('click', cancel);
  /** @param {HTMLInputElement} input */
  const value = (input) => (input.value.trim() === '' ? null : Number(input.value));
  save.addEventListener('click', () =>
    busy(
      save,
      async () => {
        await api('PATCH', `/admin/tokens/${t.tokenId}`, {
          rateLimitPerMin: value(perMin),
          rateLimitBurst: value(burst),
        });
        flash(`Rate limit of token ${t.hint} saved.`);
        await loadTokens();
      },
      (err) => tokenError(describe(err)),
    ),
  );
  cell.replaceChildren(perMin, el('span', { class: 'small' }, ' /min, burst '), burst, ' ', save, back);
  perMin.focus();
}

/**
 * Revoking is final, so it takes a second, explicit click (no native confirm(): it blocks and is hard to style).
 * @param {HTMLElement} cell
 * @param {TokenSummary} t
 */
function showRevoke(cell, t) {
  const revoke = el(
    'button',
    { type: 'button', class: 'danger', 'data-testid': 'token-revoke', 'aria-label': `Revoke token ${t.hint}` },
    'Revoke',
  );
  revoke.addEventListener('click', () => {
    const confirm = el(
      'button',
      { type: 'button', class: 'danger', 'data-testid': 'token-revoke-confirm' },
      'Yes, revoke',
    );
    const cancel = el('button', { type: 'button', class: 'secondary', 'data-testid': 'token-revoke-cancel' }, 'Cancel');
    cancel.addEventListener('click', () => showRevoke(cell, t));
    confirm.addEventListener('click', () =>
      busy(
        confirm,
        async () => {
          await api('DELETE', `/admin/tokens/${t.tokenId}`);
          flash(`Token ${t.hint} revoked.`);
          await loadTokens();
        },
        (err) => tokenError(describe(err)),
      ),
    );
    cell.replaceChildren(el('span', { class: 'small' }, 'Revoke? '), confirm, cancel);
    confirm.focus();
  });
  cell.replaceChildren(revoke);
}

/** Attaches the token dialog's buttons; a sign-out closes it. */
export function startTokens() {
  onSignOut(() => {
    const dialog = $('token-dialog');
    if (dialog.open) dialog.close();
  });
  $('token-create').addEventListener(
    'click',
    /** @param {MouseEvent} e */ (e) => {
      const bot = state.dialogBot;
      if (!bot) return;
      tokenError('');
      busy(
        /** @type {HTMLButtonElement} */ (e.currentTarget),
        async () => {
          const created = await api('POST', `/admin/bots/${bot.botId}/tokens`);
          if (bot !== state.dialogBot) return;
          const input = $('token-new-value');
          input.value = created.token;
          $('token-copy-status').textContent = '';
          $('token-new').hidden = false;
          input.focus();
          input.select();
          await loadTokens();
        },
        (err) => tokenError(describe(err)),
      );
    },
  );

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
    const botId = state.dialogBot?.botId;
    state.dialogBot = null;
    // Back to the button that opened the dialog (the table may have been re-rendered meanwhile).
    /** @type {HTMLTableRowElement[]} */
    const rows = [...$('bots-body').querySelectorAll('tr')];
    const row = botId && rows.find((r) => r.dataset.botId === botId);
    if (row) /** @type {HTMLElement | null} */ (row.querySelector('[data-testid="bot-tokens"]'))?.focus();
  });
}
