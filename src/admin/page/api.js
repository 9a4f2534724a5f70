// @ts-check
// The admin page: its one way to the admin API, what an error says, the flash area.
import { $, STORAGE_KEY } from './core.js';
import { signOut } from './signin.js';

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    /** The error body's `details` (e.g. ajv's message for a tracking plan), or null. */
    this.details = details ?? null;
  }
}

export async function api(method, path, body, token = sessionStorage.getItem(STORAGE_KEY)) {
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

/** Runs an action with its button disabled; reports errors in the flash area (or `onError`). */
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

const CODE_TEXT = {
  messenger_bot_id_taken: 'Another bot already has this messenger bot id.',
  not_found: 'It no longer exists (was it deleted?).',
};

export function describe(err) {
  if (!(err instanceof ApiError)) return `Unexpected error: ${err?.message ? err.message : String(err)}`;
  return CODE_TEXT[err.code] ?? err.message;
}

/** A 401 mid-session means the admin token was changed: sign out and say so. */
export function isSignedOutError(err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut('The admin token is no longer accepted. Sign in again.');
    return true;
  }
  return false;
}

let flashTimer = null;
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
