// @ts-check
// The admin page's one way to the admin API, signed in with the token this tab holds: requests, what an error says,
// the flash area, and signing out, which every view that holds something of the session hooks into (onSignOut).
import { $, STORAGE_KEY } from './core.js';

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {Record<string, any> | null} [details]
   */
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    /** The error body's `details` (e.g. ajv's message for a tracking plan), or null. */
    this.details = details ?? null;
  }
}

/**
 * One call of the admin API; its answer's JSON (null when empty). Typed loosely, as `$`: each caller knows the shape
 * of the route it calls.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {string | null} [token]
 * @returns {Promise<any>}
 */
export async function api(method, path, body, token = sessionStorage.getItem(STORAGE_KEY)) {
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${token ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
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

/**
 * Runs an action with its button disabled; reports errors in the flash area (or `onError`).
 * @template T
 * @param {HTMLButtonElement | null | undefined} button
 * @param {() => Promise<T>} work
 * @param {(err: unknown) => void} [onError]
 * @returns {Promise<T | undefined>}
 */
export async function busy(button, work, onError) {
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

/** @type {Record<string, string>} */
const CODE_TEXT = {
  messenger_bot_id_taken: 'Another bot already has this messenger bot id.',
  not_found: 'It no longer exists (was it deleted?).',
};

/** @param {unknown} err @returns {string} */
export function describe(err) {
  if (!(err instanceof ApiError))
    return `Unexpected error: ${err instanceof Error && err.message ? err.message : String(err)}`;
  return CODE_TEXT[err.code] ?? err.message;
}

/** @type {((message: string) => void)[]} */
const signOutHooks = [];

/**
 * What a view does when the session ends (a sign-out, a token no longer accepted), in the order the views started.
 * @param {(message: string) => void} hook
 */
export function onSignOut(hook) {
  signOutHooks.push(hook);
}

/** Ends the session: the token is forgotten, then every view lets go of what it held. @param {string} [message] */
export function signOut(message = '') {
  sessionStorage.removeItem(STORAGE_KEY);
  for (const hook of signOutHooks) {
    // One view failing to let go must not keep the others, or the sign-in form, from theirs.
    try {
      hook(message);
    } catch (err) {
      console.error(err);
    }
  }
}

/** A 401 mid-session means the admin token was changed: sign out and say so. @param {unknown} err */
export function isSignedOutError(err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut('The admin token is no longer accepted. Sign in again.');
    return true;
  }
  return false;
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let flashTimer;
/** @param {string} message @param {'info' | 'error'} [kind] */
export function flash(message, kind = 'info') {
  const box = $('flash');
  box.textContent = message;
  box.className = `flash ${kind}`;
  box.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(
    () => {
      box.hidden = true;
    },
    kind === 'error' ? 12000 : 5000,
  );
}
