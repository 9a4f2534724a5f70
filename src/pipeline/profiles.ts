// Who a person or a bot is: users[] profiles and the bot snapshot of bot_api requests.
import type { BotSnapshot, UserSeen } from '../base/model.js';
import type { DiagnosticSink } from './diagnostics.js';
import { messengerId } from './ids.js';
import { isObject } from './json.js';
import { profileText } from './strings.js';

const DESCRIPTION_CHARS = 4096;

export function parseProfiles(users: unknown, diag: DiagnosticSink): UserSeen[] {
  if (!Array.isArray(users)) {
    diag.add(null, 'user_profile_invalid', 'users', 'users must be an array of profiles; ignored');
    return [];
  }
  const out: UserSeen[] = [];
  for (let i = 0; i < users.length; i++) {
    const u = users[i];
    const id = isObject(u) ? messengerId(u.messengerUserId) : null;
    if (!isObject(u) || id === null) {
      diag.add(
        null,
        'user_profile_invalid',
        `users[${i}]`,
        'a profile needs messengerUserId, a positive integer; skipped',
      );
      continue;
    }
    const username = profileText(u.username);
    const firstName = profileText(u.firstName);
    const lastName = profileText(u.lastName);
    const languageCode = profileText(u.languageCode);
    const isPremium = u.isPremium;
    if (
      username === false ||
      firstName === false ||
      lastName === false ||
      languageCode === false ||
      (isPremium !== undefined && isPremium !== null && typeof isPremium !== 'boolean')
    ) {
      diag.add(
        null,
        'user_profile_invalid',
        `users[${i}]`,
        'username, firstName, lastName and languageCode must be strings and isPremium a boolean; skipped',
      );
      continue;
    }
    out.push({ id, username, firstName, lastName, languageCode, isPremium: isPremium as boolean | null | undefined });
  }
  return out;
}

/**
 * The bot snapshot, or null. Only the admin API sets a bot's messenger id: a snapshot naming
 * another one describes another bot and is ignored with a warning.
 */
export function parseBotSnapshot(
  bot: unknown,
  configuredMessengerBotId: string | null,
  diag: DiagnosticSink,
): BotSnapshot | null {
  const invalid = () => {
    diag.add(
      null,
      'bot_snapshot_invalid',
      'bot',
      'bot must be {messengerBotId?, name?, description?, starsAmount?} with string texts and numeric ids; ignored',
    );
    return null;
  };
  if (!isObject(bot)) return invalid();
  const name = profileText(bot.name);
  const description = profileText(bot.description, DESCRIPTION_CHARS);
  const stars = bot.starsAmount;
  const mid = bot.messengerBotId === undefined || bot.messengerBotId === null ? null : messengerId(bot.messengerBotId);
  if (
    name === false ||
    description === false ||
    (mid === null && bot.messengerBotId != null) ||
    (stars !== undefined && stars !== null && !(typeof stars === 'number' && Number.isFinite(stars)))
  ) {
    return invalid();
  }
  if (mid !== null && mid !== configuredMessengerBotId) {
    diag.add(
      null,
      'bot_snapshot_mismatch',
      'bot.messenger_bot_id',
      configuredMessengerBotId === null
        ? 'the bot has no messenger id configured; it is set with the admin API only, so the snapshot was ignored'
        : `messengerBotId ${mid} is not this bot's (${configuredMessengerBotId}); the snapshot was ignored`,
    );
    return null;
  }
  return {
    name: name ?? null,
    description: description ?? null,
    starsAmount: (stars as number | null | undefined) ?? null,
  };
}
