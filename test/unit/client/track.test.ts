// What track() stamps on an event, without a server.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../../client/src/index.js';
import { fakeFetch } from '../../helpers/client-fakes.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

const client = () => createClient({ baseUrl: 'https://ingest.test', apiKey: 'k', fetch: fakeFetch().fetch, flushIntervalMs: 60_000 });
const ev = { eventName: 'start', eventType: 'message', eventOrigin: 'custom', platformUserId: '42' } as const;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('track', () => {
  it('fills a v4 eventId, also where crypto.randomUUID is missing (a page that is not a secure context)', async () => {
    const c = client();
    expect(c.track(ev).eventId).toMatch(UUID_V4);
    const real = globalThis.crypto;
    vi.stubGlobal('crypto', { getRandomValues: (a: Uint8Array) => real.getRandomValues(a) });
    const ids = Array.from({ length: 50 }, () => c.track(ev).eventId);
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(50);
    vi.stubGlobal('crypto', { getRandomValues: (a: Uint8Array) => a.fill(0xff) });
    expect(c.track(ev).eventId).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff');
    vi.unstubAllGlobals();
    await c.close();
  });

  it('keeps the caller\'s eventId and eventDate, turns a Date into ISO, and copies the event', async () => {
    const c = client();
    const mine = { ...ev, eventId: 'A0000000-0000-4000-8000-000000000001', eventDate: new Date('2026-02-01T00:00:00Z') };
    const stamped = c.track(mine);
    expect(stamped).toEqual({ ...ev, eventId: 'A0000000-0000-4000-8000-000000000001', eventDate: '2026-02-01T00:00:00.000Z' });
    expect(stamped).not.toBe(mine);
    expect(c.track({ ...ev, eventDate: '2026-01-31T12:00:00+03:00' }).eventDate).toBe('2026-01-31T12:00:00+03:00');
    await c.close();
  });
});
