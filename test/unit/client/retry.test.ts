// The client's retry rules, as the service's retry guidance states them per endpoint.
import { describe, expect, it } from 'vitest';
import { backoffMs, isRetryable, parseRetryAfter } from '../../../client/src/retry.js';

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
