// What track() stamps on an event, without a server.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient, uuidv7 } from '../../../client/src/index.js';
import { fakeFetch } from '../../helpers/client-fakes.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

const client = () =>
  createClient({ baseUrl: 'https://ingest.test', apiKey: 'k', fetch: fakeFetch().fetch, flushIntervalMs: 60_000 });
const ev = { eventName: 'start', eventType: 'message', eventOrigin: 'custom', platformUserId: '42' } as const;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('track', () => {
  it('fills a UUIDv7 eventId: the time of the call in its first 48 bits, random bits after', async () => {
    const c = client();
    const before = Date.now();
    const ids = Array.from({ length: 50 }, () => c.track(ev).eventId);
    const after = Date.now();
    for (const id of ids) {
      expect(id).toMatch(UUID_V7);
      expect(msOf(id)).toBeGreaterThanOrEqual(before);
      expect(msOf(id)).toBeLessThanOrEqual(after);
    }
    expect(new Set(ids).size).toBe(50);
    // Only crypto.getRandomValues is needed (crypto.randomUUID is missing outside secure contexts).
    vi.stubGlobal('crypto', { getRandomValues: (a: Uint8Array) => a.fill(0xff) });
    expect(uuidv7(Date.UTC(2026, 0, 31, 12))).toBe(
      `${Date.UTC(2026, 0, 31, 12)
        .toString(16)
        .padStart(12, '0')
        .replace(/^(.{8})(.{4})$/, '$1-$2')}-7fff-bfff-ffffffffffff`,
    );
    vi.unstubAllGlobals();
    await c.close();
  });

  it("keeps the caller's eventId and eventDate, turns a Date into ISO, and copies the event", async () => {
    const c = client();
    const mine = {
      ...ev,
      eventId: 'A0000000-0000-4000-8000-000000000001',
      eventDate: new Date('2026-02-01T00:00:00Z'),
    };
    const stamped = c.track(mine);
    expect(stamped).toEqual({
      ...ev,
      eventId: 'A0000000-0000-4000-8000-000000000001',
      eventDate: '2026-02-01T00:00:00.000Z',
    });
    expect(stamped).not.toBe(mine);
    expect(c.track({ ...ev, eventDate: '2026-01-31T12:00:00+03:00' }).eventDate).toBe('2026-01-31T12:00:00+03:00');
    await c.close();
  });
});
