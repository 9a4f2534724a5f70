// The webapp client with persistence, against a fake fetch and an in-memory storage: what stays
// stored after each kind of answer, what the next session sends, and the page-hide beacons.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createClient,
  type IngestError,
  type WebAppClientOptions,
  type WebAppEventInput,
} from '../../../client/src/index.js';
import {
  accept,
  type Answer,
  fakeFetch,
  initDataFor,
  installFakePage,
  MemoryStorage,
  outboxKeyOf,
  refuse,
  settleMicrotasks,
} from '../../helpers/client-fakes.js';

const BOT = '6f1c1e0e-0000-4000-8000-000000000001';
const KEY = outboxKeyOf(BOT);
const ev = (i = 0, over: Partial<WebAppEventInput> = {}): WebAppEventInput => ({
  eventName: `e${i}`,
  eventType: 'interaction',
  ...over,
});

function webapp(storage: MemoryStorage | undefined, fetchImpl: typeof fetch, over: Partial<WebAppClientOptions> = {}) {
  return createClient({
    baseUrl: 'https://ingest.test',
    botId: BOT,
    initData: initDataFor(42),
    storage,
    fetch: fetchImpl,
    flushIntervalMs: 60_000,
    maxRetries: 0,
    gzipMinBytes: Infinity,
    ...over,
  });
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

describe('persistence (webapp endpoint)', () => {
  it('stores each tracked event until a 202 covers it', async () => {
    const storage = new MemoryStorage();
    const server = fakeFetch();
    const client = webapp(storage, server.fetch);
    const a = client.track(ev(0));
    const b = client.track(ev(1));
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([a.eventId, b.eventId]);
    expect(JSON.parse(storage.getItem(KEY)!).events.map((x: { u: string }) => x.u)).toEqual(['42', '42']);
    expect(await client.close()).toMatchObject({ accepted: 2, failed: 0 });
    expect(server.ids()).toEqual([[a.eventId, b.eventId]]);
    expect(storage.getItem(KEY)).toBeNull();
  });

  it('keeps what may pass later, drops what was rejected or failed for good, and reports both', async () => {
    const storage = new MemoryStorage();
    const answers: Answer[] = [
      'network_error',
      refuse(503, 'unavailable'),
      refuse(401, 'initdata_expired'),
      refuse(401, 'initdata_signature_invalid'),
      refuse(409, 'miniapp_ingest_disabled'),
      accept(0, 1, []),
    ];
    const server = fakeFetch((_, n) => answers[n - 1]!);
    const failed: [string, string][] = [];
    const rejected: string[] = [];
    const client = webapp(storage, server.fetch, {
      maxBatchEvents: 1,
      maxConcurrentRequests: 1,
      onFailed: (evs, e) => failed.push([evs[0]!.eventName, (e as IngestError).code]),
      onRejected: (evs) => rejected.push(...evs.map((x) => x.eventName)),
    });
    const tracked = answers.map((_, i) => client.track(ev(i)));
    await client.close();
    expect(failed).toEqual([
      ['e0', 'network_error'],
      ['e1', 'unavailable'],
      ['e2', 'initdata_expired'],
      ['e3', 'initdata_signature_invalid'],
      ['e4', 'miniapp_ingest_disabled'],
    ]);
    expect(rejected).toEqual(['e5']);
    expect(storage.ids(KEY)).toEqual(tracked.slice(0, 3).map((e) => e.eventId));
  });

  it('makes the next session send what is left first, with the same ids and dates, under its own initData', async () => {
    const storage = new MemoryStorage();
    const down = fakeFetch(() => 'network_error');
    const first = webapp(storage, down.fetch, { onFailed: () => undefined });
    const lost = [first.track(ev(0)), first.track(ev(1, { eventDate: '2026-01-31T12:00:00Z' }))];
    await first.close();
    expect(storage.ids(KEY)).toEqual(lost.map((e) => e.eventId));

    // Another user on this device does not send them under its identity.
    const stranger = fakeFetch();
    const other = webapp(storage, stranger.fetch, { initData: initDataFor(7) });
    expect(other.pending).toBe(0);
    await other.close();
    expect(stranger.requests).toEqual([]);

    const up = fakeFetch();
    const next = webapp(storage, up.fetch, { initData: initDataFor(42, 1_700_000_900) });
    expect(next.pending).toBe(2);
    const fresh = next.track(ev(2));
    const report = await next.close();
    expect(report).toMatchObject({ accepted: 3, failed: 0 });
    // Due at once despite the long flushIntervalMs: the first request carries only the stored events.
    expect(up.ids()).toEqual([lost.map((e) => e.eventId), [fresh.eventId]]);
    expect(up.requests[0]!.body.events).toEqual(lost);
    expect(up.requests[0]!.body.auth!.initData).toBe(initDataFor(42, 1_700_000_900));
    expect(storage.getItem(KEY)).toBeNull();
  });

  it('bounds storage by maxQueueEvents: kept failures make room for new events', async () => {
    const storage = new MemoryStorage();
    const server = fakeFetch(() => 'network_error');
    const client = webapp(storage, server.fetch, { maxQueueEvents: 3, onFailed: () => undefined });
    const old = [client.track(ev(0)), client.track(ev(1)), client.track(ev(2))];
    await client.flush();
    const newer = [client.track(ev(3)), client.track(ev(4))];
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([old[2]!.eventId, ...newer.map((e) => e.eventId)]);
    await client.close();
  });

  it('refuses an event JSON cannot carry instead of failing its batch and the storage', async () => {
    const storage = new MemoryStorage();
    const server = fakeFetch();
    const failed: string[] = [];
    const client = webapp(storage, server.fetch, { onFailed: (_, e) => failed.push((e as IngestError).code) });
    const good = client.track(ev(0));
    client.track(ev(1, { propsLong: { n: 1n as unknown as number } }));
    expect(failed).toEqual(['event_unserializable']);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([good.eventId]);
    expect(await client.close()).toMatchObject({ accepted: 1, failed: 1 });
    expect(() => webapp(storage, server.fetch).track(ev(2, { propsLong: { n: 1n as unknown as number } }))).toThrow(
      expect.objectContaining({ code: 'event_unserializable' }),
    );
  });

  it('uses localStorage by default, not with persist: false, and never on the bot_api endpoint', async () => {
    const storage = new MemoryStorage();
    (globalThis as Record<string, unknown>).localStorage = storage;
    cleanups.push(() => delete (globalThis as Record<string, unknown>).localStorage);
    const server = fakeFetch();
    const off = webapp(undefined, server.fetch, { persist: false });
    off.track(ev(0));
    const botApi = createClient({
      baseUrl: 'https://ingest.test',
      apiKey: 'k',
      fetch: server.fetch,
      flushIntervalMs: 60_000,
    });
    botApi.track({ eventName: 'start', eventType: 'message', eventOrigin: 'custom', platformUserId: '42' });
    await settleMicrotasks();
    expect(storage.writes).toBe(0);
    const on = webapp(undefined, server.fetch);
    const kept = on.track(ev(1));
    await settleMicrotasks();
    expect(storage.ids(KEY)).toEqual([kept.eventId]);
    for (const c of [off, botApi, on]) expect(await c.close()).toMatchObject({ accepted: 1 });
    expect(storage.getItem(KEY)).toBeNull();
    expect(storage.writes).toBe(2);
  });
});

describe('beacons when the page is hidden (webapp endpoint)', () => {
  it('hands queued, then in-flight events to sendBeacon in small text/plain bodies, once each, and keeps them stored', async () => {
    const page = installFakePage();
    cleanups.push(page.uninstall);
    const storage = new MemoryStorage();
    const server = fakeFetch((_, n) => (n === 1 ? accept(10) : 'hang'));
    const client = webapp(storage, server.fetch, { maxBatchEvents: 10, maxConcurrentRequests: 1 });
    const text = 'z'.repeat(400);
    const settled = Array.from({ length: 10 }, (_, i) => client.track(ev(i, { text })));
    await expect.poll(() => client.pending).toBe(0);
    const inFlight = Array.from({ length: 10 }, (_, i) => client.track(ev(10 + i, { text })));
    await expect.poll(() => server.requests.length).toBe(2);
    const queued = Array.from({ length: 45 }, (_, i) => client.track(ev(20 + i, { text })));
    expect(client.pending).toBe(55);

    page.hide();
    const sent = await page.sent();
    expect(sent.length).toBeGreaterThan(1);
    for (const b of sent) {
      expect(b.url).toBe('https://ingest.test/tg/webapp');
      expect(b.type).toBe('text/plain;charset=utf-8');
      expect(new TextEncoder().encode(b.text).byteLength).toBeLessThanOrEqual(16_000);
      expect(b.body.botId).toBe(BOT);
      expect(b.body.auth.initData).toBe(initDataFor(42));
    }
    const carried = sent.flatMap((b) => b.body.events.map((e) => e.eventId));
    expect(carried).toEqual([...queued, ...inFlight].map((e) => e.eventId));
    expect(sent.flatMap((b) => b.body.events)).toEqual([...queued, ...inFlight]);
    expect(carried).not.toContain(settled[0]!.eventId);

    // pagehide after the hidden state sends nothing twice; a new event goes on the next hide.
    page.pagehide();
    expect((await page.sent()).length).toBe(sent.length);
    page.show();
    const late = client.track(ev(99));
    page.pagehide();
    expect((await page.sent()).at(-1)!.body.events.map((e) => e.eventId)).toEqual([late.eventId]);

    expect(storage.ids(KEY)).toEqual([...inFlight, ...queued, late].map((e) => e.eventId));
    expect(client.pending).toBe(56);
  });

  it('stops at the first body the browser refuses; the rest wait in storage for the next hide or session', async () => {
    // Like Chromium: at most 64 KiB of beacons in flight per page.
    const page = installFakePage((bytes, inFlight) => inFlight + bytes <= 65_536);
    cleanups.push(page.uninstall);
    const storage = new MemoryStorage();
    const client = webapp(storage, fakeFetch().fetch);
    const events = Array.from({ length: 400 }, (_, i) => client.track(ev(i, { text: 'w'.repeat(400) })));
    page.pagehide();
    const sent = await page.sent();
    expect(sent.length).toBe(4);
    const carried = sent.flatMap((b) => b.body.events.map((e) => e.eventId));
    expect(carried).toEqual(events.slice(0, carried.length).map((e) => e.eventId));
    expect(carried.length).toBeLessThan(400);
    await settleMicrotasks();
    expect(storage.ids(KEY)).toHaveLength(400);

    // Once those beacons are out, the next hide sends what did not fit.
    page.drain();
    page.hide();
    const more = (await page.sent()).slice(sent.length).flatMap((b) => b.body.events.map((e) => e.eventId));
    expect(more).toEqual(events.slice(carried.length, 2 * carried.length).map((e) => e.eventId));
    await client.close();
  });

  it('sends no more bodies after one is refused, even smaller ones that would fit', async () => {
    let calls = 0;
    const page = installFakePage(() => ++calls !== 2);
    cleanups.push(page.uninstall);
    const client = webapp(new MemoryStorage(), fakeFetch().fetch);
    const events = Array.from({ length: 100 }, (_, i) => client.track(ev(i, { text: 'v'.repeat(400) })));
    page.pagehide();
    const sent = await page.sent();
    expect(calls).toBe(2);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body.events.map((e) => e.eventId)).toEqual(
      events.slice(0, sent[0]!.body.events.length).map((e) => e.eventId),
    );
    await client.close();
  });

  it('stops watching the page once closed', async () => {
    const page = installFakePage();
    cleanups.push(page.uninstall);
    const storage = new MemoryStorage();
    const client = webapp(storage, fakeFetch(() => 'network_error').fetch, { onFailed: () => undefined });
    const kept = client.track(ev(0));
    await client.close();
    page.pagehide();
    page.hide();
    expect(await page.sent()).toEqual([]);
    expect(storage.ids(KEY)).toEqual([kept.eventId]);
  });
});
