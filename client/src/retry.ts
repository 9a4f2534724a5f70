// Which answers are worth another attempt, and how long to wait before it (the service's retry guidance).

/**
 * The service's two ingestion endpoints: `bot_api` (`POST /tg`, a bot's backend) and `webapp` (`POST /tg/webapp`,
 * mini-app code).
 */
export type Endpoint = 'bot_api' | 'webapp';

/** Status 0 stands for "no response" (network error or timeout): always retryable, the server dedups by eventId. */
export function isRetryable(endpoint: Endpoint, status: number): boolean {
  if (status === 0 || status === 429) return true;
  // bot_api's own transient answer is 503; a proxy in front answers 502 or 504 when no instance
  // does. Its 500 means a bug: final.
  if (endpoint === 'bot_api') return status === 502 || status === 503 || status === 504;
  return status === 408 || (status >= 500 && status <= 599);
}

/** Retry-After as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Every HTTP date format starts with the day's name; Date.parse alone would read "1.5" as a date.
  if (!/^[A-Za-z]{3}/.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Full jitter: spreads the retries of many clients that failed together. */
export function backoffMs(retry: number, baseMs: number, maxMs: number, random = Math.random): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** retry));
}

/** setTimeout's longest delay: a longer one fires at once. */
const TIMER_MAX_MS = 2 ** 31 - 1;

/**
 * The longest Retry-After honoured (or `maxMs`, if longer). The service asks for seconds; a proxy that answers with
 * days (a misconfiguration, or someone on the path) must not park a request, and close(), for that long.
 */
export const RETRY_AFTER_MAX_MS = 10 * 60_000;

/** The longest Retry-After honoured with `maxMs` (retryMaxMs): also the most a request's retries wait in all. */
export function retryAfterCapMs(maxMs: number): number {
  return Math.max(maxMs, RETRY_AFTER_MAX_MS);
}

/**
 * The wait before a retry the server timed with Retry-After: what it asked (at most RETRY_AFTER_MAX_MS or `maxMs`),
 * plus a random share of as much again (at most `maxMs` more). Clients refused in the same second (a database
 * failover refuses every client at once) come back spread over a second rather than all at its end.
 */
export function retryAfterDelayMs(retryAfterMs: number, maxMs: number, random = Math.random): number {
  const asked = Math.min(retryAfterMs, retryAfterCapMs(maxMs));
  return Math.min(TIMER_MAX_MS, asked + Math.floor(random() * Math.min(asked, maxMs)));
}

/** The wait before retry `retry` (0-based): spread past Retry-After when the server gave one, else the backoff. */
export function retryDelayMs(
  retry: number,
  retryAfterMs: number | null,
  baseMs: number,
  maxMs: number,
  random = Math.random,
): number {
  // A Retry-After of 0 (or a date past) asks for nothing: the backoff then keeps retries from running back to back.
  return retryAfterMs === null || retryAfterMs <= 0
    ? backoffMs(retry, baseMs, maxMs, random)
    : retryAfterDelayMs(retryAfterMs, maxMs, random);
}

/** With `keepAlive` false the timer does not hold a Node.js process open (browsers have no such notion). */
export function sleep(ms: number, keepAlive = true): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    if (!keepAlive) unref(t);
  });
}

export function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
