// The webapp client's outbox on its own: what it writes to storage, what a later session loads, and
// the bodies a hidden page hands to sendBeacon.
import { describe, expect, it } from 'vitest';
import { BEACON_BODY_BYTES, beaconBodies, webappHead } from '../../../client/src/beacon.js';
import { IngestError } from '../../../client/src/errors.js';
import { initDataUser, mayPassLater, Outbox, outboxKey } from '../../../client/src/outbox.js';
import type { Stamped } from '../../../client/src/types.js';
import { initDataFor, MemoryStorage, settleMicrotasks } from '../../helpers/client-fakes.js';

type Ev = { eventName: string; text?: string };
const KEY = outboxKey('bot-1');
let n = 0;
const ev = (over: Partial<Ev> = {}): Stamped<Ev> => ({
  eventId: crypto.randomUUID(),
  eventDate: `2026-01-31T12:00:${String(n++ % 60).padStart(2, '0')}Z`,
  eventName: 'open',
  ...over,
});

function outbox(storage: MemoryStorage | null, user: string | null = '42') {
  return new Outbox<Ev>(storage, KEY, () => user);
}

describe('outbox', () => {
  it('stores what it holds once per task, tagged with the user, and forgets what settles', async () => {
    const storage = new MemoryStorage();
    const box = outbox(storage);
    const [a, b, c] = [ev(), ev(), ev()];
    box.add(a);
    box.add(b);
    box.add(c);
    expect(storage.writes).toBe(0);
    await settleMicrotasks();
    expect(storage.writes).toBe(1);
    expect(JSON.parse(storage.getItem(KEY)!)).toEqual({
      v: 1,
      events: [
        { u: '42', e: a },
        { u: '42', e: b },
        { u: '42', e: c },
      ],
    });
    box.settle([b]);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([a.eventId, c.eventId]);
    box.settle([a, c]);
    await settleMicrotasks();
    expect(storage.getItem(KEY)).toBeNull();
    expect(box.size).toBe(0);
  });

  it('loads the stored events of its own user only, unchanged, oldest first and at most max', async () => {
    const storage = new MemoryStorage();
    const first = outbox(storage, '42');
    const mine = [ev(), ev(), ev()];
    const theirs = ev();
    for (const e of mine) first.add(e);
    await settleMicrotasks();
    outbox(storage, '7').add(theirs);
    await settleMicrotasks();

    const next = outbox(storage, '42');
    expect(next.load(2)).toEqual(mine.slice(0, 2));
    expect(next.load(10)).toEqual(mine.slice(2));
    expect(next.size).toBe(3);
    expect(outbox(storage, null).load(10)).toEqual([]);
    // Settling its own leaves the other user's in storage.
    next.settle(mine);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([theirs.eventId]);
    expect(outbox(storage, '7').load(10)).toEqual([theirs]);
  });

  it('merges with what another tab stored meanwhile instead of overwriting it', async () => {
    const storage = new MemoryStorage();
    const tab1 = outbox(storage);
    const tab2 = outbox(storage);
    const [a, b, c] = [ev(), ev(), ev()];
    tab1.add(a);
    tab2.add(b);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([a.eventId, b.eventId]);
    tab1.settle([a]);
    tab2.add(c);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([b.eventId, c.eventId]);
  });

  it('keeps working when storage refuses a write, and ignores a stored value it cannot read', async () => {
    const storage = new MemoryStorage();
    storage.setItem(KEY, '{not json');
    const box = outbox(storage);
    expect(box.load(10)).toEqual([]);
    const a = ev({ text: 'x'.repeat(500) });
    const b = ev();
    box.add(b);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([b.eventId]);
    storage.quota = 400;
    box.add(a);
    await settleMicrotasks();
    // Full: a stays in memory only; b's settlement still reaches storage.
    expect(storage.ids(KEY)).toEqual([b.eventId]);
    expect(box.size).toBe(2);
    box.settle([b]);
    await settleMicrotasks();
    expect(storage.getItem(KEY)).toBeNull();
    // Room again: the pending addition is written with the next change.
    storage.quota = Infinity;
    const c = ev();
    box.add(c);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([a.eventId, c.eventId]);
  });

  it('without storage holds events in memory only', async () => {
    const box = outbox(null);
    box.add(ev());
    await settleMicrotasks();
    expect(box.persists).toBe(false);
    expect(box.size).toBe(1);
    expect(box.load(10)).toEqual([]);
  });

  it('makes room by dropping kept failures, oldest first, never queued events', async () => {
    const storage = new MemoryStorage();
    const box = outbox(storage);
    const [f1, q1, f2, q2] = [ev(), ev(), ev(), ev()];
    for (const e of [f1, q1, f2, q2]) box.add(e);
    box.keepFailed([f1, f2]);
    box.makeRoom(3);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([q1.eventId, f2.eventId, q2.eventId]);
    box.makeRoom(1);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([q1.eventId, q2.eventId]);
  });

  it('orders beacon candidates queued, then failed, then in flight, each beaconed once', () => {
    const box = outbox(null);
    const [inFlight, failed, q1, q2] = [ev(), ev(), ev(), ev()];
    for (const e of [inFlight, failed, q1, q2]) box.add(e);
    box.keepFailed([failed]);
    expect(box.forBeacon([q1, q2])).toEqual([q1, q2, failed, inFlight]);
    box.markBeaconed([q1, inFlight]);
    expect(box.forBeacon([q1, q2])).toEqual([q2, failed]);
    box.settle([q2]);
    expect(box.forBeacon([q1])).toEqual([failed]);
  });
});

describe('beaconBodies', () => {
  const head = webappHead('bot-1', initDataFor(42));

  it('packs events in order into bodies under the byte limit, each valid JSON of the webapp endpoint', () => {
    const events = Array.from({ length: 300 }, (_, i) => ev({ text: `${'é'.repeat(i % 50)}${i}` }));
    const bodies = [...beaconBodies(head, events, (e) => JSON.stringify(e))];
    expect(bodies.length).toBeGreaterThan(1);
    for (const b of bodies) {
      expect(new TextEncoder().encode(b.json).byteLength).toBeLessThanOrEqual(BEACON_BODY_BYTES);
      expect(JSON.parse(b.json)).toEqual({ botId: 'bot-1', auth: { initData: initDataFor(42) }, events: b.items });
    }
    expect(bodies.flatMap((b) => b.items)).toEqual(events);
    // Greedy: adding the next body's first event would have crossed the limit.
    for (let i = 0; i + 1 < bodies.length; i++) {
      const next = JSON.stringify(bodies[i + 1]!.items[0]);
      expect(
        new TextEncoder().encode(bodies[i]!.json).byteLength + 1 + new TextEncoder().encode(next).byteLength,
      ).toBeGreaterThan(BEACON_BODY_BYTES);
    }
  });

  it('caps the events per body and skips an event no body can carry', () => {
    const small = Array.from({ length: 7 }, () => ev());
    const huge = ev({ text: 'x'.repeat(2000) });
    const bodies = [...beaconBodies(head, [small[0]!, huge, ...small.slice(1)], (e) => JSON.stringify(e), 1500, 3)];
    expect(bodies.map((b) => b.items)).toEqual([small.slice(0, 3), small.slice(3, 6), small.slice(6)]);
    expect([...beaconBodies(head, [], (e: Stamped<Ev>) => JSON.stringify(e))]).toEqual([]);
  });

  it('encodes lazily, so a refused body stops the work', () => {
    let encoded = 0;
    const events = Array.from({ length: 100 }, () => ev({ text: 'y'.repeat(100) }));
    const it = beaconBodies(
      head,
      events,
      (e) => {
        encoded++;
        return JSON.stringify(e);
      },
      1000,
    );
    it.next();
    expect(encoded).toBeLessThan(10);
  });
});

describe('initDataUser', () => {
  it('reads user.id from initData', () => {
    expect(initDataUser(initDataFor(777001))).toBe('777001');
    expect(initDataUser('user=%7B%22id%22%3A%2212%22%7D')).toBe('12');
    for (const s of ['', 'auth_date=1', 'user=%7B%7D', 'user=not-json', 'user=%7B%22id%22%3Anull%7D'])
      expect(initDataUser(s), s).toBeNull();
  });
});

describe('mayPassLater', () => {
  it('keeps failures a later attempt or session may pass, drops final ones', () => {
    const e = (code: string, status: number | null, retriesExhausted = false) =>
      new IngestError({ code, status, message: code, retriesExhausted });
    expect(
      [
        e('network_error', null, true),
        e('timeout', null, true),
        e('unavailable', 503, true),
        e('rate_limited', 429, true),
        e('http_502', 502, true),
        e('initdata_expired', 401),
        e('initdata_from_future', 401),
      ].map(mayPassLater),
    ).toEqual([true, true, true, true, true, true, true]);
    expect(
      [
        e('initdata_signature_invalid', 401),
        e('bot_unknown', 401),
        e('miniapp_ingest_disabled', 409),
        e('allowance_exhausted', 402),
        e('payload_too_large', 413),
        e('invalid_json', 400),
        e('client_error', null),
        e('body_error', null),
      ].map(mayPassLater),
    ).toEqual([false, false, false, false, false, false, false, false]);
    expect(mayPassLater(new Error('plain'))).toBe(false);
  });
});
