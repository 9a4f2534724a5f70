// One logical request's retries, against a fake fetch and a fake clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { send, type TransportConfig } from '../../../client/src/transport.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

function config(fetch: typeof globalThis.fetch): TransportConfig {
  return {
    endpoint: 'bot_api',
    url: 'http://ingest.invalid/tg',
    headers: { 'content-type': 'application/json' },
    fetch,
    requestTimeoutMs: 30_000,
    gzipMinBytes: 16_384,
    maxRetries: 8,
    retryBaseMs: 250,
    retryMaxMs: 30_000,
    keepAlive: true,
  };
}

describe('send', () => {
  it("waits at most 10 minutes in all across a request's retries, whatever Retry-After asks", async () => {
    const at: number[] = [];
    const fetch = (async () => {
      at.push(Date.now());
      return new Response(JSON.stringify({ error: 'overloaded', message: 'behind' }), {
        status: 503,
        headers: { 'retry-after': '86400' },
      });
    }) as typeof globalThis.fetch;
    const started = Date.now();
    const result = send(config(fetch), () => ({ events: [] }));
    await vi.advanceTimersByTimeAsync(11 * 60_000);
    const r = await Promise.race([result, Promise.resolve('still waiting' as const)]);
    // The first attempt, and one more after the 10 minutes: not 8 retries of 10 minutes each.
    expect(at.map((t) => t - started)).toEqual([0, 10 * 60_000]);
    expect(r === 'still waiting' ? r : { ok: r.ok, attempts: r.attempts }).toEqual({ ok: false, attempts: 2 });
    if (r !== 'still waiting' && !r.ok) {
      expect(r.error.code).toBe('overloaded');
      // Reported as retries run out: the caller (the outbox) keeps the events for later.
      expect(r.error.retriesExhausted).toBe(true);
    }
  });

  it('still retries as often as maxRetries allows when the waits are short', async () => {
    let calls = 0;
    const fetch = (async () => {
      calls++;
      return new Response(JSON.stringify({ error: 'overloaded', message: 'behind' }), {
        status: 503,
        headers: { 'retry-after': '1' },
      });
    }) as typeof globalThis.fetch;
    const result = send(config(fetch), () => ({ events: [] }));
    await vi.advanceTimersByTimeAsync(60_000);
    const r = await result;
    expect(r.ok).toBe(false);
    expect(calls).toBe(9);
  });
});
