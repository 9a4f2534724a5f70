// The client's retry rules, as the service's retry guidance states them per endpoint.
import { describe, expect, it } from 'vitest';
import { backoffMs, isRetryable, parseRetryAfter, retryDelayMs } from '../../../client/src/retry.js';

describe('isRetryable', () => {
  it('bot_api: only no answer, 429 and 503', () => {
    const statuses = [0, 400, 401, 402, 403, 404, 408, 409, 413, 415, 429, 500, 502, 503, 504, 599];
    expect(statuses.filter((s) => isRetryable('bot_api', s))).toEqual([0, 429, 502, 503, 504]);
  });

  it('webapp: no answer, 408, 429 and every 5xx', () => {
    const statuses = [0, 400, 401, 402, 403, 404, 408, 409, 413, 415, 429, 499, 500, 502, 503, 504, 599, 600];
    expect(statuses.filter((s) => isRetryable('webapp', s))).toEqual([0, 408, 429, 500, 502, 503, 504, 599]);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2015, 9, 21, 7, 27, 30);

  it('reads delay-seconds as milliseconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
  });

  it('reads an HTTP date as the time left until it, never negative', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:27:00 GMT', now)).toBe(0);
  });

  it('gives null for an absent or unreadable value, so the backoff applies', () => {
    for (const v of [null, '', 'soon', '1.5', '-1', '3s', 'Xyz, 99 Foo 2015 25:00:00 GMT'])
      expect(parseRetryAfter(v, now), String(v)).toBeNull();
  });
});

describe('backoffMs', () => {
  it('is random(0, min(max, base * 2^retry)), floored', () => {
    const almostOne = () => 0.999_999;
    expect([0, 1, 2, 3, 6, 7, 20].map((r) => backoffMs(r, 250, 30_000, almostOne))).toEqual([
      249, 499, 999, 1999, 15_999, 29_999, 29_999,
    ]);
    expect([0, 3, 20].map((r) => backoffMs(r, 250, 30_000, () => 0))).toEqual([0, 0, 0]);
    expect(backoffMs(2, 250, 30_000, () => 0.5)).toBe(500);
    expect(backoffMs(4, 100, 1000, () => 0.25)).toBe(250);
  });

  it('stays within its bounds for any random value', () => {
    for (let retry = 0; retry < 40; retry++) {
      for (const r of [0, 0.1, 0.5, 0.9, 0.999_999_999]) {
        const ms = backoffMs(retry, 50, 400, () => r);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThan(Math.min(400, 50 * 2 ** retry));
        expect(Number.isInteger(ms)).toBe(true);
      }
    }
  });
});

describe('retryDelayMs', () => {
  it('without Retry-After is the backoff', () => {
    expect(retryDelayMs(3, null, 250, 30_000, () => 0.5)).toBe(backoffMs(3, 250, 30_000, () => 0.5));
  });

  it('with Retry-After waits at least that long, spread over as much again, the spread capped by retryMaxMs', () => {
    expect(retryDelayMs(0, 1000, 250, 30_000, () => 0)).toBe(1000);
    expect(retryDelayMs(0, 1000, 250, 30_000, () => 0.5)).toBe(1500);
    expect(retryDelayMs(5, 1000, 250, 30_000, () => 0.999_999)).toBe(1999);
    expect(retryDelayMs(0, 120_000, 250, 30_000, () => 0.999_999)).toBe(149_999);
    // Honoured up to 10 minutes (or retryMaxMs, if longer): a proxy asking for days does not park the request.
    expect(retryDelayMs(0, 600_000, 250, 30_000, () => 0)).toBe(600_000);
    expect(retryDelayMs(0, 3 * 86_400_000, 250, 30_000, () => 0)).toBe(600_000);
    expect(retryDelayMs(0, 2 ** 40, 250, 30_000, () => 0.5)).toBe(615_000);
    expect(retryDelayMs(0, Number.POSITIVE_INFINITY, 250, 30_000, () => 0)).toBe(600_000);
    expect(retryDelayMs(0, 3_600_000, 250, 1_800_000, () => 0)).toBe(1_800_000);
    // Never longer than a timer holds (a longer one would fire at once).
    expect(retryDelayMs(0, 2 ** 40, 250, 2 ** 40, () => 0)).toBe(2 ** 31 - 1);
    // Retry-After 0 or a past date: the backoff, not a retry at once.
    expect(retryDelayMs(3, 0, 250, 30_000, () => 0.5)).toBe(backoffMs(3, 250, 30_000, () => 0.5));
  });

  it('spreads clients refused together: 200 draws of Retry-After 1 s cover the second after it', () => {
    const draws = Array.from({ length: 200 }, () => retryDelayMs(0, 1000, 250, 30_000));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(1000);
    expect(Math.max(...draws)).toBeLessThan(2000);
    // Every tenth of that second gets some of them; none gets more than a fifth.
    const tenths = Array.from({ length: 10 }, (_, i) => draws.filter((d) => Math.floor((d - 1000) / 100) === i).length);
    expect(Math.min(...tenths)).toBeGreaterThan(0);
    expect(Math.max(...tenths)).toBeLessThan(40);
  });
});
