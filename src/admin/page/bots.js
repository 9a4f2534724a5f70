// @ts-check
// The admin page: the bots of a project, their switches and settings.
import { $, botLabel, el, MESSENGER_ID, state } from './core.js';
import { api, busy, describe, flash, isSignedOutError } from './api.js';
import { openTokens } from './tokens.js';

/** @typedef {import('./core.js').Bot} Bot */

/**
 * Bots made on this page: a list asked for before one was made arrives without it, and must not drop it.
 * @type {Set<string>}
 */
const made = new Set();

export async function loadBots() {
  const projectId = state.projectId;
  try {
    /** @type {Bot[]} */
    const bots = await api('GET', `/admin/projects/${projectId}/bots`);
    if (projectId !== state.projectId) return;
    const listed = new Set(bots.map((b) => b.botId));
    state.bots = [...bots, ...state.bots.filter((b) => made.has(b.botId) && !listed.has(b.botId))];
    renderBots();
  } catch (err) {
    if (!isSignedOutError(err) && projectId === state.projectId) flash(`Bots: ${describe(err)}`, 'error');
  }
}

/** @param {Bot} bot */
function replaceBot(bot) {
  state.bots = state.bots.map((b) => (b.botId === bot.botId ? bot : b));
}

export function renderBots() {
  const body = $('bots-body');
  body.replaceChildren(...state.bots.map(botRow));
  $('bots-empty').hidden = state.bots.length > 0 || state.projectId === null;
}

/** @param {Bot} b */
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
  idForm.addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const raw = idInput.value.trim();
      if (raw !== '' && !MESSENGER_ID.test(raw)) {
        flash('A messenger bot id is a positive whole number (up to 19 digits), or empty to unset it.', 'error');
        idInput.focus();
        return;
      }
      await busy(idSave, async () => {
        /** @type {Bot} */
        const bot = await api('PATCH', `/admin/bots/${b.botId}`, { messengerBotId: raw === '' ? null : raw });
        replaceBot(bot);
        idInput.value = bot.messengerBotId === null ? '' : String(bot.messengerBotId);
        flash(
          bot.messengerBotId === null ? `Messenger bot id of ${label} unset.` : `Messenger bot id of ${label} saved.`,
        );
      });
    },
  );

  const tokens = el(
    'button',
    { type: 'button', class: 'secondary', 'data-testid': 'bot-tokens', 'aria-haspopup': 'dialog' },
    'Manage tokens',
  );
  tokens.addEventListener('click', () => openTokens(b.botId));

  return el(
    'tr',
    { 'data-testid': 'bot-row', 'data-bot-id': b.botId },
    el(
      'td',
      { 'data-label': 'Bot' },
      el('span', { class: 'name' }, label),
      el('br'),
      el('span', { class: 'muted mono small' }, b.botId),
    ),
    el('td', { 'data-label': 'Messenger bot id' }, idForm),
    el('td', { 'data-label': 'Mini-app ingest' }, toggle(b, 'miniAppIngest', `Mini-app ingest for ${label}`)),
    el('td', { 'data-label': 'API ingest' }, toggle(b, 'apiIngest', `API ingest for ${label}`)),
    el('td', { 'data-label': 'Tokens' }, tokens),
  );
}

/**
 * A checkbox with role=switch; the PATCH decides the final state, a failure puts it back.
 * @param {Bot} b
 * @param {'miniAppIngest' | 'apiIngest'} field
 * @param {string} ariaLabel
 */
function toggle(b, field, ariaLabel) {
  const input = el('input', {
    type: 'checkbox',
    role: 'switch',
    class: 'switch',
    'aria-label': ariaLabel,
    'data-testid': `toggle-${field}`,
  });
  input.checked = b[field];
  const stateText = el('span', { class: 'switch-state', 'aria-hidden': 'true' }, b[field] ? 'on' : 'off');
  input.addEventListener('change', async () => {
    const wanted = input.checked;
    input.disabled = true;
    input.setAttribute('aria-busy', 'true');
    try {
      /** @type {Bot} */
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

/** Attaches the form that creates a bot. */
export function startBots() {
  $('bot-create-form').addEventListener(
    'submit',
    /** @param {SubmitEvent} e */ async (e) => {
      e.preventDefault();
      const name = $('bot-name').value.trim();
      const messengerBotId = $('bot-messenger-id').value.trim();
      if (messengerBotId !== '' && !MESSENGER_ID.test(messengerBotId)) {
        flash('A messenger bot id is a positive whole number (up to 19 digits).', 'error');
        $('bot-messenger-id').focus();
        return;
      }
      const projectId = state.projectId;
      /** @type {{ projectId: string | null, name?: string, messengerBotId?: string }} */
      const body = { projectId };
      if (name !== '') body.name = name;
      if (messengerBotId !== '') body.messengerBotId = messengerBotId;
      const form = /** @type {HTMLFormElement} */ (e.target);
      await busy(/** @type {HTMLButtonElement | null} */ (e.submitter), async () => {
        /** @type {{ bot: Bot }} */
        const { bot } = await api('POST', '/admin/bots', body);
        form.reset();
        made.add(bot.botId);
        if (projectId === state.projectId) {
          state.bots.push(bot);
          renderBots();
        }
        flash(`Bot “${botLabel(bot)}” created; both switches are on. Create a token for it with “Manage tokens”.`);
      });
    },
  );
}
