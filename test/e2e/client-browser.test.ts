import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provision, type Provisioned } from '../helpers/api.js';
import { startClientPageServer, type StaticServer } from '../helpers/client-static.js';
import { type Chromium, launchChromium } from '../helpers/chromium.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
const USER = 777_002;

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;
let statics: StaticServer;
let chrome: Chromium;
let browser: BrowserContext;
/** Uncaught page errors and console errors other than the failed requests Chromium logs itself. */
const pageProblems: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex, RATE_LIMIT_BURST: '100000' });
  p = await provision(srv.url);
  statics = await startClientPageServer();
  chrome = await launchChromium();
  browser = chrome.context;
});

afterAll(async () => {
  await chrome?.close();
  await statics?.close();
  await srv?.stop();
  await db?.drop();
});

interface Sent {
  eventId: string;
  eventDate: string;
}

async function openMiniApp(page?: Page): Promise<Page> {
  const tab = page ?? (await browser.newPage());
  tab.setDefaultTimeout(10_000);
  tab.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
  tab.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
      pageProblems.push(`console: ${msg.text()}`);
  });
  await tab.goto(`${statics.url}/`);
  await tab.waitForFunction('window.harness !== undefined');
  return tab;
}

/** Calls window.harness[name](...args) in the page. */
function harness<T>(page: Page, name: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(([n, a]) => (globalThis as any).harness[n as string](...(a as unknown[])), [
    name,
    args,
  ] as const) as Promise<T>;
}

async function storedCount(ids: string[]): Promise<{ rows: number; distinct: number }> {
  const [r] =
    await db.sql`SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct FROM events WHERE event_id = ANY(${ids}::uuid[])`;
  return { rows: r!.rows, distinct: r!.distinct };
}

describe('client in a browser (webapp endpoint)', () => {
  it('loses nothing when the mini-app closes: beacons on pagehide, the next session sends what is stored, each event stored once', async () => {
    const key = `tg-ingest:outbox:${p.botId}`;
    const options = {
      baseUrl: srv.url,
      botId: p.botId,
      maxBatchEvents: 100,
      maxConcurrentRequests: 1,
      flushIntervalMs: 600_000,
    };
    // Big enough that the 150 queued events do not all fit in the 64 KiB a closing page may beacon.
    const text = 'lorem ipsum dolor sit amet '.repeat(15);

    const first = await openMiniApp(browser.pages()[0]);
    const initData1 = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: USER, first_name: 'Ada' } });
    expect(await harness<number>(first, 'start', { ...options, initData: initData1 })).toBe(0);

    // A full batch leaves at once; its 202 settles it, and storage lets go of it.
    const settled = await harness<Sent[]>(first, 'track', 100, text);
    await expect.poll(() => harness<number>(first, 'pending')).toBe(0);
    expect(await storedCount(settled.map((e) => e.eventId))).toEqual({ rows: 100, distinct: 100 });

    // The next batch is committed by the service, but its answer never reaches the client.
    await harness(first, 'hold');
    const inFlight = await harness<Sent[]>(first, 'track', 100, text);
    await expect.poll(() => harness<number[]>(first, 'withheld')).toEqual([202]);
    expect(await storedCount(inFlight.map((e) => e.eventId))).toEqual({ rows: 100, distinct: 100 });

    // A full batch waiting for the request slot and a partial one waiting for flushIntervalMs.
    const queued = await harness<Sent[]>(first, 'track', 150, text);
    expect(await harness<number>(first, 'pending')).toBe(250);
    const stored = JSON.parse((await harness<string | null>(first, 'stored', key))!) as {
      events: { u: string; e: Sent }[];
    };
    expect(stored.events.map((x) => x.e.eventId)).toEqual([...inFlight, ...queued].map((e) => e.eventId));
    expect(new Set(stored.events.map((x) => x.u))).toEqual(new Set([String(USER)]));
    expect(await storedCount(queued.map((e) => e.eventId))).toEqual({ rows: 0, distinct: 0 });

    // Closing fires pagehide: the never-sent events leave in beacons, as many as the browser takes.
    const closed = first.waitForEvent('close');
    await first.close({ runBeforeUnload: true });
    await closed;
    await expect
      .poll(async () => (await storedCount(queued.map((e) => e.eventId))).rows, { timeout: 10_000 })
      .toBeGreaterThan(0);
    // Let the beacons all land, then count what they carried.
    let beaconed = -1;
    await expect
      .poll(
        async () => {
          const now = (await storedCount(queued.map((e) => e.eventId))).rows;
          const stable = now === beaconed;
          beaconed = now;
          return stable;
        },
        { timeout: 10_000, interval: 300 },
      )
      .toBe(true);
    expect(beaconed).toBeGreaterThan(0);
    expect(beaconed).toBeLessThan(150);

    // The next session, same origin and user, a new initData: the stored events go first, at once.
    const second = await openMiniApp();
    const before = JSON.parse((await harness<string | null>(second, 'stored', key))!) as { events: { e: Sent }[] };
    expect(before.events.map((x) => x.e.eventId)).toEqual([...inFlight, ...queued].map((e) => e.eventId));
    const initData2 = makeInitData(signer, {
      messengerBotId: p.messengerBotId,
      user: { id: USER, first_name: 'Ada' },
      authDate: Math.floor(Date.now() / 1000) + 1,
    });
    expect(initData2).not.toBe(initData1);
    expect(await harness<number>(second, 'start', { ...options, initData: initData2 })).toBe(250);
    expect(await harness(second, 'flush')).toEqual({ accepted: 250, rejected: 0, failed: 0 });
    await expect.poll(() => harness<string | null>(second, 'stored', key)).toBeNull();
    expect(await harness<string[]>(second, 'problems')).toEqual([]);

    // Every tracked event exactly once, with the id and date it was tracked with, for the initData user.
    const all = [...settled, ...inFlight, ...queued];
    expect(await storedCount(all.map((e) => e.eventId))).toEqual({ rows: 350, distinct: 350 });
    const rows =
      await db.sql`SELECT event_id, event_date, platform_user_id, channel FROM events WHERE event_id = ANY(${all.map((e) => e.eventId)}::uuid[])`;
    const byId = new Map(rows.map((r) => [r.event_id as string, r]));
    for (const e of all) {
      const r = byId.get(e.eventId)!;
      expect((r.event_date as Date).toISOString()).toBe(e.eventDate);
      expect(r).toMatchObject({ platform_user_id: String(USER), channel: 'webapp' });
    }
    expect(pageProblems).toEqual([]);
    await second.close();
  });
});
