// initData of a mini-app, checked the messenger's "third-party" way: an Ed25519 signature over
// "<messengerBotId>:WebAppData\n" + the received fields except hash and signature, as key=value
// with values decoded exactly as received, sorted by key, joined by newlines.
import type { ErrorCode } from '../base/errors.js';
import type { UserSeen } from '../base/model.js';
import { profileText } from '../pipeline/strings.js';

export interface ParsedInitData {
  /** The sorted key=value lines, without the bot prefix. */
  fields: string;
  signature: string;
  authDate: number;
  user: UserSeen;
}

export type InitDataCheck = { ok: true; data: ParsedInitData } | { ok: false; code: ErrorCode };

export const FUTURE_TOLERANCE_S = 60;

function decode(s: string): string | null {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '));
  } catch {
    return null;
  }
}

/** initData is authoritative: a field that is absent, empty or not a string clears the stored one. */
function profileField(v: unknown): string | null {
  const s = profileText(v);
  return typeof s === 'string' && s !== '' ? s : null;
}

/** The messenger allows up to 512 characters of A-Z a-z 0-9 _ -; anything else is not kept. */
function startParam(v: string | undefined): string | null {
  return v !== undefined && /^[A-Za-z0-9_-]{1,512}$/.test(v) ? v : null;
}

/** Parses the string and checks everything but the signature; pure, so it runs anywhere. */
export function parseInitData(initData: string): InitDataCheck {
  if (initData.trim() === '') return { ok: false, code: 'initdata_empty' };
  if (initData.length > 16_384) return { ok: false, code: 'initdata_malformed' };
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  for (const part of initData.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) return { ok: false, code: 'initdata_malformed' };
    const key = decode(part.slice(0, eq));
    const value = decode(part.slice(eq + 1));
    if (key === null || value === null || seen.has(key)) return { ok: false, code: 'initdata_malformed' };
    seen.add(key);
    pairs.push([key, value]);
  }
  const get = (k: string) => pairs.find(([key]) => key === k)?.[1];
  const signature = get('signature');
  if (signature === undefined || signature === '') return { ok: false, code: 'initdata_signature_missing' };
  const authDateRaw = get('auth_date');
  if (authDateRaw === undefined || !/^[0-9]{1,12}$/.test(authDateRaw))
    return { ok: false, code: 'initdata_auth_date_missing' };
  const userRaw = get('user');
  let user: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = userRaw === undefined ? null : JSON.parse(userRaw);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      user = parsed as Record<string, unknown>;
  } catch {
    user = null;
  }
  const id = user?.id;
  if (user === null || typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0)
    return { ok: false, code: 'initdata_user_missing' };

  const fields = pairs
    .filter(([k]) => k !== 'hash' && k !== 'signature')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  return {
    ok: true,
    data: {
      fields,
      signature,
      authDate: Number(authDateRaw),
      user: {
        id: String(id),
        username: profileField(user.username),
        firstName: profileField(user.first_name),
        lastName: profileField(user.last_name),
        languageCode: profileField(user.language_code),
        isPremium: user.is_premium === true,
        startParam: startParam(get('start_param')),
      },
    },
  };
}

export function dataCheckString(messengerBotId: string, fields: string): string {
  return `${messengerBotId}:WebAppData\n${fields}`;
}

/** Accepted while younger than maxAgeS; more than a minute ahead of our clock is refused. */
export function checkAge(authDate: number, nowS: number, maxAgeS: number): ErrorCode | null {
  if (authDate > nowS + FUTURE_TOLERANCE_S) return 'initdata_from_future';
  if (nowS - authDate >= maxAgeS) return 'initdata_expired';
  return null;
}
