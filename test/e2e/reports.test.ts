// The daily and revenue reports on seeded events, against numbers computed here from what was sent: duplicates in a
// request, redeliveries, a charge reported by two tokens, refunds, rejected events, users across days and the month
// boundary, history that moves a user's first day back; the first campaign of a user on either endpoint.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/pipeline/event.js';
import { SummaryWriter, utcDay } from '../../src/pipeline/summary.js';
import { connect } from '../../src/db/connect.js';
import { FOLD_VERSION } from '../../src/reports/fold-sql.js';
import { admin, call, filedUsers, postBotApi, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;
let secondToken: string;

interface Sent {
  eventId: string;
  eventName: string;
  eventType: string;
  eventDate: string;
  eventOrigin: 'platform' | 'custom';
  platformUserId: string;
  propsString?: Record<string, string>;
  propsLong?: Record<string, number>;
  /** webapp: the signed start_param of the session. */
  campaign?: string;
}

/** Every event the service stored, as this test knows it: the model the expected numbers come from. */
const stored: Sent[] = [];

const ev = (user: string, date: string, over: Partial<Sent> = {}): Sent => ({
  eventId: randomUUID(),
  eventName: 'message_received',
  eventType: 'message',
  eventDate: date,
  eventOrigin: 'custom',
  platformUserId: user,
  ...over,
});
const payment = (user: string, date: string, charge: string, amount: number, name = 'successful_payment'): Sent =>
  ev(user, date, {
    eventName: name,
    eventType: 'payment',
    eventOrigin: 'platform',
    propsString: { 'tg.currency': 'XTR', 'tg.telegram_payment_charge_id': charge },
    propsLong: { 'tg.total_amount': amount },
  });

async function send(token: string, events: Sent[], expectStored: Sent[]): Promise<void> {
  const r = await postBotApi(srv.url, token, { events });
  expect([202, 400]).toContain(r.status);
  for (const e of expectStored) if (!stored.some((s) => s.eventId === e.eventId)) stored.push(e);
}

const report = async (path: string) =>
  (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/${path}`)).body;

/**
 * Runs `fn` while no fold can begin (the lock a fold takes first, held): what commits meanwhile is folded together,
 * in one fold, once `fn` is done.
 */
async function holdingFolds(fn: () => Promise<void>): Promise<void> {
  const holder = connect(db.url, { max: 1, name: 'tg-ingest test fold holder' });
  try {
    await holder.begin(async (tx) => {
      await tx`LOCK TABLE report_watermark IN EXCLUSIVE MODE`;
      await fn();
    });
  } finally {
    await holder.end();
  }
}

/** The daily report as this test computes it from `stored`. */
function expectedDaily(from: string, to: string) {
  const firstDay = new Map<string, string>();
  for (const e of stored) {
    const d = e.eventDate.slice(0, 10);
    const f = firstDay.get(e.platformUserId);
    if (f === undefined || d < f) firstDay.set(e.platformUserId, d);
  }
  const rows = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    const those = stored.filter((e) => e.eventDate.slice(0, 10) === day);
    const byType: Record<string, number> = {};
    for (const type of EVENT_TYPES) byType[type] = those.filter((e) => e.eventType === type).length;
    rows.push({
      day,
      events: those.length,
      eventsByType: byType,
      activeUsers: new Set(those.map((e) => e.platformUserId)).size,
      newUsers: [...firstDay.values()].filter((d) => d === day).length,
    });
  }
  return rows;
}

/**
 * The campaigns report as this test computes it from `stored`: a user is new under their first campaign (first
 * touch); activity and payments count under the first campaign known by then (the test folds each request before
 * the next one that could change it); payments once per charge.
 */
function expectedCampaigns(from: string, to: string) {
  const inRange = (e: Sent) => e.eventDate.slice(0, 10) >= from && e.eventDate.slice(0, 10) <= to;
  const first = new Map<string, string>();
  const firstDay = new Map<string, string>();
  const at = new Map<Sent, string | null>();
  for (const e of stored) {
    const c = e.campaign ?? e.propsString?.['tg.start_param'];
    if (c !== undefined && !first.has(e.platformUserId)) first.set(e.platformUserId, c);
    at.set(e, first.get(e.platformUserId) ?? null);
    const d = e.eventDate.slice(0, 10);
    if (!firstDay.has(e.platformUserId) || d < firstDay.get(e.platformUserId)!) firstDay.set(e.platformUserId, d);
  }
  type Row = {
    campaign: string | null;
    newUsers: number;
    activeUsers: number;
    payers: number;
    revenue: { currency: string; netAmount: number }[];
  };
  const rows = new Map<string | null, Row & { active: Set<string>; paid: Set<string> }>();
  const row = (c: string | null) => {
    if (!rows.has(c))
      rows.set(c, {
        campaign: c,
        newUsers: 0,
        activeUsers: 0,
        payers: 0,
        revenue: [],
        active: new Set(),
        paid: new Set(),
      });
    return rows.get(c)!;
  };
  for (const [u, d] of firstDay) if (d >= from && d <= to) row(first.get(u) ?? null).newUsers++;
  for (const e of stored.filter(inRange)) row(at.get(e)!).active.add(e.platformUserId);
  const charges = new Map<string, Sent>();
  for (const e of stored) {
    const charge = e.propsString?.['tg.telegram_payment_charge_id'];
    if (charge !== undefined && !charges.has(`${e.eventName}:${charge}`)) charges.set(`${e.eventName}:${charge}`, e);
  }
  for (const e of [...charges.values()].filter(inRange)) {
    const r = row(at.get(e)!);
    if (e.eventName === 'successful_payment') r.paid.add(e.platformUserId);
    const currency = e.propsString!['tg.currency']!;
    let line = r.revenue.find((v) => v.currency === currency);
    if (line === undefined) r.revenue.push((line = { currency, netAmount: 0 }));
    line.netAmount += (e.eventName === 'refunded_payment' ? -1 : 1) * e.propsLong!['tg.total_amount']!;
  }
  return [...rows.values()]
    .map(({ active, paid, ...r }): Row => ({ ...r, activeUsers: active.size, payers: paid.size }))
    .filter((r) => r.newUsers + r.activeUsers + r.payers + r.revenue.length > 0)
    .sort((a, b) =>
      a.campaign === null
        ? 1
        : b.campaign === null
          ? -1
          : b.newUsers - a.newUsers || (a.campaign < b.campaign ? -1 : 1),
    );
}

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex, RATE_LIMIT_BURST: '100000' });
  p = await provision(srv.url);
  secondToken = (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`)).body.token;
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

describe('reports', () => {
  it('count stored events once: duplicates, redeliveries, a charge reported twice, refunds, rejected events', async () => {
    const a1 = ev('1001', '2026-10-31T23:59:59Z');
    const a2 = ev('1001', '2026-11-01T00:00:00Z');
    const a3 = ev('1002', '2026-11-01T12:00:00Z', { eventType: 'interaction', eventName: 'button' });
    const pay = payment('1002', '2026-11-01T12:05:00Z', 'charge-1', 250);
    const bad = ev('not-a-user', '2026-11-01T12:00:00Z');
    // a2 twice in the request: the first counts.
    await send(p.token, [a1, a2, a2, a3, pay, bad], [a1, a2, a3, pay]);
    // The whole request again (a client's retry): nothing new.
    await send(p.token, [a1, a2, a3, pay], []);
    // The same charge from another token: a second event, stored (not billed), but one payment.
    const payAgain = payment('1002', '2026-11-01T12:06:00Z', 'charge-1', 250);
    await send(secondToken, [payAgain], [payAgain]);
    const pay2 = payment('1003', '2026-11-02T08:00:00Z', 'charge-2', 100);
    const refund = payment('1002', '2026-11-02T09:00:00Z', 'charge-1', 250, 'refunded_payment');
    await send(p.token, [pay2, refund], [pay2, refund]);

    const want = expectedDaily('2026-10-30', '2026-11-03');
    await expect.poll(() => report('daily?from=2026-10-30&to=2026-11-03'), { timeout: 10_000 }).toEqual(want);
    expect(want.map((d) => [d.events, d.activeUsers, d.newUsers])).toEqual([
      [0, 0, 0],
      [1, 1, 1],
      [4, 2, 1],
      [2, 2, 1],
      [0, 0, 0],
    ]);
    expect(await report('revenue')).toEqual([
      { currency: 'XTR', totalAmount: 350, refundedAmount: 250, netAmount: 100, payments: 2, refunds: 1 },
    ]);
    const byDay = await report('revenue?from=2026-11-01&to=2026-11-02&by=day');
    expect(byDay[0].days).toEqual([
      { day: '2026-11-01', totalAmount: 250, refundedAmount: 0, netAmount: 250, payments: 1, refunds: 0 },
      { day: '2026-11-02', totalAmount: 100, refundedAmount: 250, netAmount: -150, payments: 1, refunds: 1 },
    ]);
    expect((await report('revenue?from=2026-11-02&to=2026-11-02'))[0]).toMatchObject({
      totalAmount: 100,
      netAmount: -150,
    });
  });

  it("moves a user's first day back when older history arrives later", async () => {
    const old = ev('1002', '2026-10-15T10:00:00Z');
    await send(p.token, [old], [old]);
    const want = expectedDaily('2026-10-15', '2026-11-03');
    await expect.poll(() => report('daily?from=2026-10-15&to=2026-11-03'), { timeout: 10_000 }).toEqual(want);
    expect(want.find((d) => d.day === '2026-10-15')!.newUsers).toBe(1);
    expect(want.find((d) => d.day === '2026-11-01')!.newUsers).toBe(0);
  });

  it("keeps a user's first campaign and follows the latest, from /start on bot_api and the signed start_param on webapp", async () => {
    const start = (param: string, date: string) =>
      ev('1004', date, {
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': param },
      });
    const s1 = start('spring', '2026-11-02T10:00:00Z');
    await send(p.token, [s1], [s1]);
    await expect.poll(() => campaign('1004'), { timeout: 10_000 }).toEqual(['spring', 'spring']);
    const s2 = start('autumn', '2026-11-03T10:00:00Z');
    await send(p.token, [s2], [s2]);
    await expect.poll(() => campaign('1004'), { timeout: 10_000 }).toEqual(['spring', 'autumn']);

    const initData = makeInitData(signer, {
      messengerBotId: p.messengerBotId,
      user: { id: 1005, first_name: 'Mia' },
      extra: { start_param: 'tiktok_q4' },
    });
    const w = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: {
        botId: p.botId,
        auth: { initData },
        events: [
          { eventId: randomUUID(), eventName: 'app_open', eventType: 'interaction', eventDate: '2026-11-03T11:00:00Z' },
        ],
      },
    });
    expect(w.status).toBe(202);
    stored.push({ ...ev('1005', '2026-11-03T11:00:00Z', { eventType: 'interaction' }), campaign: 'tiktok_q4' });
    await expect.poll(() => campaign('1005'), { timeout: 10_000 }).toEqual(['tiktok_q4', 'tiktok_q4']);

    const want = expectedCampaigns('2026-10-15', '2026-11-03');
    expect(want).toEqual([
      { campaign: 'spring', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: 'tiktok_q4', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: null, newUsers: 3, activeUsers: 3, payers: 2, revenue: [{ currency: 'XTR', netAmount: 100 }] },
    ]);
    expect(await report('campaigns?from=2026-10-15&to=2026-11-03')).toEqual(want);
    // A range that leaves out the first days: users active then, but not new.
    expect(await report('campaigns?from=2026-11-03&to=2026-11-03')).toEqual(
      expectedCampaigns('2026-11-03', '2026-11-03'),
    );
  });

  it('files a user first seen without a campaign under it once it is known: new there, earlier activity under none', async () => {
    const before = ev('1006', '2026-11-01T09:00:00Z');
    await send(p.token, [before], [before]);
    await expect.poll(() => campaign('1006'), { timeout: 10_000 }).toEqual([null, null]);
    const start = ev('1006', '2026-11-02T09:00:00Z', {
      eventOrigin: 'platform',
      eventName: 'command',
      propsString: { 'tg.command': 'start', 'tg.start_param': 'summer' },
    });
    const paid = payment('1006', '2026-11-02T09:05:00Z', 'ch-1006', 250);
    await send(p.token, [start, paid], [start, paid]);
    await expect.poll(() => campaign('1006'), { timeout: 10_000 }).toEqual(['summer', 'summer']);
    const want = expectedCampaigns('2026-10-15', '2026-11-03');
    expect(want.find((r) => r.campaign === 'summer')).toEqual({
      campaign: 'summer',
      newUsers: 1,
      activeUsers: 1,
      payers: 1,
      revenue: [{ currency: 'XTR', netAmount: 250 }],
    });
    await expect.poll(() => report('campaigns?from=2026-10-15&to=2026-11-03'), { timeout: 10_000 }).toEqual(want);
    // limit: the campaigns with the most new users (ties by name), and those without one besides.
    expect(await report('campaigns?from=2026-10-15&to=2026-11-03&limit=1')).toEqual([want[0], want.at(-1)]);
    // On the day before the campaign was known, the user was active under none, and new under summer.
    const nov1 = expectedCampaigns('2026-11-01', '2026-11-01');
    expect(nov1.find((r) => r.campaign === 'summer')).toMatchObject({ newUsers: 1, activeUsers: 0 });
    expect(await report('campaigns?from=2026-11-01&to=2026-11-01')).toEqual(nov1);
  });

  it('files again the days of a user it remembers once their campaign is known (activity then counts under it)', async () => {
    const other = await provision(srv.url);
    const base = `/admin/projects/${other.projectId}/reports`;
    const get = async (path: string) => (await admin(srv.url, 'GET', `${base}/${path}`)).body;
    const day1 = '2026-11-10';
    const plain = () => ev('8001', `${day1}T10:00:00Z`);
    const send1 = async (e: Sent) => expect((await postBotApi(srv.url, other.token, { events: [e] })).status).toBe(202);
    // Folded one request at a time: the second finds the user remembered from the first, filed on the day.
    for (const n of [1, 2]) {
      await send1(plain());
      await expect
        .poll(async () => (await get(`daily?from=${day1}&to=${day1}`))[0].events, { timeout: 10_000 })
        .toBe(n);
    }
    await send1(
      ev('8001', '2026-11-11T10:00:00Z', {
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': 'winter' },
      }),
    );
    await expect
      .poll(async () => (await get(`campaigns?from=2026-11-11&to=2026-11-11`))[0]?.campaign, { timeout: 10_000 })
      .toBe('winter');
    // Back on the first day: the campaign is known by now, so this activity counts under it (refiled).
    await send1(plain());
    await expect.poll(async () => (await get(`daily?from=${day1}&to=${day1}`))[0].events, { timeout: 10_000 }).toBe(3);
    expect(await get(`campaigns?from=${day1}&to=${day1}`)).toEqual([
      { campaign: 'winter', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: null, newUsers: 0, activeUsers: 1, payers: 0, revenue: [] },
    ]);
  });

  it("files again a remembered user's days when their campaign arrives in rows no summary holds (a redelivery's commit)", async () => {
    const other = await provision(srv.url);
    const get = async (path: string) =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/${path}`)).body;
    const day1 = '2026-11-10';
    const plain = () => ev('8101', `${day1}T10:00:00Z`);
    const sendAll = async (events: Sent[]) =>
      expect((await postBotApi(srv.url, other.token, { events })).status).toBe(202);
    const events1 = async () => (await get(`daily?from=${day1}&to=${day1}`))[0].events;
    const first = plain();
    await sendAll([first]);
    await expect.poll(events1, { timeout: 10_000 }).toBe(1);
    await sendAll([plain()]);
    await expect.poll(events1, { timeout: 10_000 }).toBe(2);
    // A redelivery in the request: the commit goes through the staging table, and its rows hold no summary.
    await sendAll([
      first,
      ev('8101', '2026-11-11T10:00:00Z', {
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': 'autumn' },
      }),
    ]);
    const [{ n }] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM events WHERE project_id = ${other.projectId} AND summarized IS NOT TRUE`;
    expect(n).toBe(1);
    await expect
      .poll(async () => (await get('campaigns?from=2026-11-11&to=2026-11-11'))[0]?.campaign, { timeout: 10_000 })
      .toBe('autumn');
    await sendAll([plain()]);
    await expect.poll(events1, { timeout: 10_000 }).toBe(3);
    expect(await get(`campaigns?from=${day1}&to=${day1}`)).toEqual([
      { campaign: 'autumn', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: null, newUsers: 0, activeUsers: 1, payers: 0, revenue: [] },
    ]);
  });

  it("files again a remembered user's days when their campaign arrives in a row committed while a fold runs", async () => {
    const other = await provision(srv.url);
    const get = async (path: string) =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/${path}`)).body;
    const day1 = '2026-11-10';
    const send = async (user: string, date: string) =>
      expect((await postBotApi(srv.url, other.token, { events: [ev(user, date)] })).status).toBe(202);
    const events = async (day: string) => (await get(`daily?from=${day}&to=${day}`))[0].events;
    // Folded one request at a time: the second finds the user remembered from the first, filed on day1.
    for (const n of [1, 2]) {
      await send('8401', `${day1}T10:00:00Z`);
      await expect.poll(() => events(day1), { timeout: 10_000 }).toBe(n);
    }
    // The next fold stops at its fold statement (report_day_types held), after it read who rows no summary hold
    // name; a row naming the user's first campaign is committed meanwhile, by hand: the next fold's.
    const blocker = connect(db.url, { max: 1, name: 'tg-ingest test lock holder' });
    try {
      await blocker.begin(async (hold) => {
        await hold`LOCK TABLE report_day_types IN SHARE MODE`;
        await send('8402', '2026-11-12T10:00:00Z');
        await expect
          .poll(
            async () =>
              (
                await db.sql<{ n: number }[]>`
                  SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                  WHERE c.relname = 'report_day_types' AND NOT l.granted`
              )[0]!.n,
            { timeout: 10_000 },
          )
          .toBe(1);
        await db.sql`
          INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                              platform_user_id, origin, channel, billed, tg)
          SELECT ${other.projectId}, ${other.botId}, ${randomUUID()}, 'command', 'message',
                 '2026-11-11T10:00:00Z', received_at, 8401, 'platform', 'bot_api', true,
                 '{"start_param": "spring"}'::jsonb
          FROM events WHERE project_id = ${other.projectId} AND platform_user_id = 8402`;
      });
    } finally {
      await blocker.end();
    }
    await expect
      .poll(async () => (await get('campaigns?from=2026-11-11&to=2026-11-11'))[0]?.campaign, { timeout: 10_000 })
      .toBe('spring');
    // Back on day1: the row named the user, so the memory forgot them: probed, and the day refiled under the
    // campaign.
    await send('8401', `${day1}T11:00:00Z`);
    await expect.poll(() => events(day1), { timeout: 10_000 }).toBe(3);
    expect(await get(`campaigns?from=${day1}&to=${day1}`)).toEqual([
      { campaign: 'spring', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: null, newUsers: 0, activeUsers: 1, payers: 0, revenue: [] },
    ]);
  }, 60_000);

  it("still counts one project's remembered users without a probe when another's rows no summary holds name over 10,000 users", async () => {
    const quiet = await provision(srv.url);
    const busy = await provision(srv.url);
    const day = '2026-11-12';
    const daily = async (q: Provisioned) =>
      (await admin(srv.url, 'GET', `/admin/projects/${q.projectId}/reports/daily?from=${day}&to=${day}`)).body[0];
    const sendQuiet = async () =>
      expect((await postBotApi(srv.url, quiet.token, { events: [ev('8201', `${day}T10:00:00Z`)] })).status).toBe(202);
    await sendQuiet();
    await expect.poll(daily.bind(null, quiet), { timeout: 10_000 }).toMatchObject({ events: 1 });
    let before = await filedUsers(srv.url);
    await sendQuiet();
    await expect.poll(daily.bind(null, quiet), { timeout: 10_000 }).toMatchObject({ events: 2 });
    expect(await filedUsers(srv.url)).toEqual({ hits: before.hits + 1, misses: before.misses });
    // One fold holds the quiet project's third request and 10,001 users of the busy one in rows no summary holds
    // (as a tenant's redeliveries would).
    before = await filedUsers(srv.url);
    await holdingFolds(async () => {
      await sendQuiet();
      await db.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, billed)
        SELECT ${busy.projectId}, ${busy.botId}, gen_random_uuid(), 'message_received', 'message',
               ${`${day}T10:00:00Z`}, now(), 9000000 + g, 'custom', 'bot_api', true
        FROM generate_series(1, 10001) g`;
    });
    await expect
      .poll(daily.bind(null, busy), { timeout: 20_000 })
      .toMatchObject({ events: 10_001, activeUsers: 10_001 });
    await expect.poll(daily.bind(null, quiet), { timeout: 10_000 }).toMatchObject({ events: 3, activeUsers: 1 });
    // The quiet project's user was still remembered: counted without a probe, and so again in the next fold.
    expect(await filedUsers(srv.url)).toEqual({ hits: before.hits + 1, misses: before.misses });
    await sendQuiet();
    await expect.poll(daily.bind(null, quiet), { timeout: 10_000 }).toMatchObject({ events: 4, activeUsers: 1 });
    expect(await filedUsers(srv.url)).toEqual({ hits: before.hits + 2, misses: before.misses });
  }, 60_000);

  it("files again a remembered user's days when their campaign arrives among rows no summary holds naming over 10,000 of their project's users", async () => {
    const busy = await provision(srv.url);
    const get = async (path: string) =>
      (await admin(srv.url, 'GET', `/admin/projects/${busy.projectId}/reports/${path}`)).body;
    const day1 = '2026-11-14';
    const day2 = '2026-11-15';
    const send = async () =>
      expect((await postBotApi(srv.url, busy.token, { events: [ev('8501', `${day1}T10:00:00Z`)] })).status).toBe(202);
    const events1 = async () => (await get(`daily?from=${day1}&to=${day1}`))[0].events;
    // Folded one request at a time: the second finds the user remembered from the first, filed on day1.
    for (const n of [1, 2]) {
      await send();
      await expect.poll(events1, { timeout: 10_000 }).toBe(n);
    }
    // One commit: 10,001 other users of the project, and the user's first campaign, in rows no summary holds. Too
    // many users to list: the fold marks the project whole, and everything remembered of it must go.
    const writer = connect(db.url, { max: 1, name: 'tg-ingest test writer' });
    try {
      await writer.begin(async (tx) => {
        await tx`
          INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                              platform_user_id, origin, channel, billed)
          SELECT ${busy.projectId}, ${busy.botId}, gen_random_uuid(), 'message_received', 'message',
                 ${`${day2}T10:00:00Z`}, now(), 9100000 + g, 'custom', 'bot_api', true
          FROM generate_series(1, 10001) g`;
        await tx`
          INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                              platform_user_id, origin, channel, billed, tg)
          VALUES (${busy.projectId}, ${busy.botId}, ${randomUUID()}, 'command', 'message', ${`${day2}T10:00:00Z`},
                  now(), 8501, 'platform', 'bot_api', true, '{"start_param": "summer"}'::jsonb)`;
      });
    } finally {
      await writer.end();
    }
    await expect
      .poll(async () => (await get(`campaigns?from=${day2}&to=${day2}`))[0]?.campaign, { timeout: 20_000 })
      .toBe('summer');
    // Back on day1: probed, not counted from memory, so the day is refiled under the campaign.
    await send();
    await expect.poll(events1, { timeout: 10_000 }).toBe(3);
    expect(await get(`campaigns?from=${day1}&to=${day1}`)).toEqual([
      { campaign: 'summer', newUsers: 1, activeUsers: 1, payers: 0, revenue: [] },
      { campaign: null, newUsers: 0, activeUsers: 1, payers: 0, revenue: [] },
    ]);
  }, 60_000);

  it('forgets every remembered user when rows no summary holds name over 10,000 users of over 1,000 projects', async () => {
    const quiet = await provision(srv.url);
    const day = '2026-11-13';
    const daily = async (projectId: string) =>
      (await admin(srv.url, 'GET', `/admin/projects/${projectId}/reports/daily?from=${day}&to=${day}`)).body[0];
    const sendQuiet = async (events: number) => {
      expect((await postBotApi(srv.url, quiet.token, { events: [ev('8301', `${day}T10:00:00Z`)] })).status).toBe(202);
      await expect.poll(() => daily(quiet.projectId), { timeout: 10_000 }).toMatchObject({ events });
    };
    await sendQuiet(1);
    let before = await filedUsers(srv.url);
    await sendQuiet(2);
    expect(await filedUsers(srv.url)).toEqual({ hits: before.hits + 1, misses: before.misses });
    // 1,001 projects of 10 users each, in rows no summary holds (by hand: the reports read projects, not bots), in
    // the fold of the quiet project's third request.
    const many = (
      await db.sql<{ project_id: string }[]>`
        INSERT INTO projects (name) SELECT 'tenant ' || g FROM generate_series(1, 1001) g RETURNING project_id::text`
    ).map((r) => r.project_id);
    before = await filedUsers(srv.url);
    await holdingFolds(async () => {
      expect((await postBotApi(srv.url, quiet.token, { events: [ev('8301', `${day}T10:00:00Z`)] })).status).toBe(202);
      await db.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, billed)
        SELECT p, ${quiet.botId}, gen_random_uuid(), 'message_received', 'message',
               ${`${day}T10:00:00Z`}, now(), 9100000 + u, 'custom', 'bot_api', true
        FROM unnest(${many}::uuid[]) p, generate_series(1, 10) u`;
    });
    await expect.poll(() => daily(quiet.projectId), { timeout: 20_000 }).toMatchObject({ events: 3, activeUsers: 1 });
    for (const projectId of [many[0]!, many[1000]!])
      expect(await daily(projectId)).toMatchObject({ events: 10, activeUsers: 10, newUsers: 10 });
    // Too many projects to forget one by one: that fold probed every user without asking the memory and left
    // nothing remembered, so the quiet user is probed in the next one too.
    expect(await filedUsers(srv.url)).toEqual(before);
    await sendQuiet(4);
    expect(await filedUsers(srv.url)).toEqual({ hits: before.hits, misses: before.misses + 1 });
  }, 60_000);

  it('keeps folding after a payment whose charge id is too long for an index (a poison event for every project)', async () => {
    const other = await provision(srv.url);
    const huge = Array.from({ length: 4096 }, () => String.fromCharCode(33 + Math.floor(Math.random() * 90))).join('');
    const poison = payment('3001', '2026-11-05T10:00:00Z', huge, 700);
    expect((await postBotApi(srv.url, other.token, { events: [poison] })).status).toBe(202);
    const after = ev('3002', '2026-11-05T11:00:00Z');
    expect((await postBotApi(srv.url, other.token, { events: [after] })).status).toBe(202);
    const revenue = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/revenue`)).body;
    await expect
      .poll(revenue, { timeout: 10_000 })
      .toEqual([{ currency: 'XTR', totalAmount: 700, refundedAmount: 0, netAmount: 700, payments: 1, refunds: 0 }]);
    const day = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/daily?from=2026-11-05&to=2026-11-05`))
        .body[0];
    await expect.poll(day, { timeout: 10_000 }).toMatchObject({ events: 2, activeUsers: 2 });
  });

  it('keeps folding after events dated at the ends of the calendar (year 1 BC in UTC, year 10000), with a campaign', async () => {
    const other = await provision(srv.url);
    const edge = (date: string) =>
      ev('5001', date, {
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': 'edge' },
      });
    const events = [
      edge('0001-01-01T00:00:00+14:00'),
      edge('9999-12-31T23:59:59-14:00'),
      ev('5002', '2026-11-07T10:00:00Z'),
    ];
    expect((await postBotApi(srv.url, other.token, { events })).status).toBe(202);
    const day = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/daily?from=2026-11-07&to=2026-11-07`))
        .body[0];
    await expect.poll(day, { timeout: 10_000 }).toMatchObject({ events: 1, activeUsers: 1, newUsers: 1 });
    const later = ev('5003', '2026-11-07T11:00:00Z');
    expect((await postBotApi(srv.url, other.token, { events: [later] })).status).toBe(202);
    await expect.poll(day, { timeout: 10_000 }).toMatchObject({ events: 2, activeUsers: 2 });
  });

  it('counts a commit that lands a minute after its request arrived (a standby slow to confirm, a failover), the other commits counted meanwhile', async () => {
    const other = await provision(srv.url);
    const daily = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/daily?from=2026-11-06&to=2026-11-06`))
        .body[0];
    // A transaction as a slow commit leaves it: a row received as it began, visible a minute later.
    await db.sql.begin(async (tx) => {
      await tx`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, tg, billed)
        VALUES (${other.projectId}, ${other.botId}, ${randomUUID()}, 'message_received', 'message',
                '2026-11-06T10:00:00Z', now(), 4001, 'custom', 'bot_api', '{}', true)`;
      // Meanwhile the folds go on: a request received after it is counted at once.
      expect((await postBotApi(srv.url, other.token, { events: [ev('4002', '2026-11-06T11:00:00Z')] })).status).toBe(
        202,
      );
      await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events: 1, activeUsers: 1, newUsers: 1 });
      await new Promise((r) => setTimeout(r, 60_000));
      expect(await daily()).toMatchObject({ events: 1 });
    });
    await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events: 2, activeUsers: 2, newUsers: 2 });
  }, 100_000);

  it('counts rows no report summary holds as it counts the others: a commit through the staging table, a row by hand', async () => {
    const other = await provision(srv.url);
    const day = '2026-11-08';
    const first = ev('6001', `${day}T10:00:00Z`);
    const fresh = ev('6002', `${day}T11:00:00Z`);
    const summarized = () =>
      db.sql`SELECT platform_user_id::text AS user, summarized FROM events
        WHERE project_id = ${other.projectId} ORDER BY 1`;
    await holdingFolds(async () => {
      expect((await postBotApi(srv.url, other.token, { events: [first] })).status).toBe(202);
      // Part redelivered: the writer's COPY meets the stored row and moves the request in through its staging table.
      expect((await postBotApi(srv.url, other.token, { events: [first, fresh] })).status).toBe(202);
      await db.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, billed)
        VALUES (${other.projectId}, ${other.botId}, ${randomUUID()}, 'message_received', 'message',
                ${`${day}T12:00:00Z`}, now(), 6003, 'custom', 'bot_api', true)`;
      expect(await summarized()).toEqual([
        { user: '6001', summarized: true },
        { user: '6002', summarized: false },
        { user: '6003', summarized: false },
      ]);
    });
    const daily = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/daily?from=${day}&to=${day}`)).body[0];
    await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events: 3, activeUsers: 3, newUsers: 3 });
    // Marked folded, in the fold that counted them: never counted again.
    expect((await summarized()).map((r) => r.summarized)).toEqual([true, true, true]);
  });

  it('keeps folding after a summary it cannot read (a hand edit): deleted and logged, the other events counted', async () => {
    const other = await provision(srv.url);
    // Bytes of another version, and well-formed bytes naming a user no bigint holds (which the fold's SQL would refuse).
    const fractional = new SummaryWriter(other.projectId, new Date().toISOString(), 1);
    fractional.addRecord(1.5, utcDay('2026-11-10T10:00:00Z'), 0, null, null);
    const bad = await db.sql<{ id: string }[]>`
      INSERT INTO report_summaries (received_from, received_to, summary)
      VALUES (now(), now(), '\x02ff'), (now(), now(), ${Buffer.from(fractional.bytes())})
      RETURNING summary_id::text AS id`;
    expect(bad).toHaveLength(2);
    expect((await postBotApi(srv.url, other.token, { events: [ev('6101', '2026-11-10T10:00:00Z')] })).status).toBe(202);
    const daily = async () =>
      (await admin(srv.url, 'GET', `/admin/projects/${other.projectId}/reports/daily?from=2026-11-10&to=2026-11-10`))
        .body[0];
    await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events: 1, activeUsers: 1, newUsers: 1 });
    expect(
      await db.sql`SELECT 1 FROM report_summaries WHERE summary_id = ANY(${bad.map((b) => b.id)}::bigint[])`,
    ).toHaveLength(0);
    expect(srv.output.some((l) => l.includes('an unreadable report summary was deleted'))).toBe(true);
  });

  it('answers CSV with the same numbers', async () => {
    const r = await fetch(
      `${srv.url}/admin/projects/${p.projectId}/reports/daily?from=2026-11-01&to=2026-11-02&format=csv`,
      {
        headers: { authorization: `Bearer ${(await import('../helpers/server.js')).ADMIN_TOKEN}` },
      },
    );
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await r.text()).trim().split('\r\n');
    const json = await report('daily?from=2026-11-01&to=2026-11-02');
    expect(lines[0]!.split(',').slice(0, 2)).toEqual(['day', 'events']);
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 2))).toEqual(
      json.map((d: { day: string; events: number }) => [d.day, String(d.events)]),
    );
    expect(lines[0]!.split(',').slice(-2)).toEqual(['active_users', 'new_users']);
  });

  it('refuses a malformed, reversed or too long range, and an unknown project', async () => {
    for (const q of [
      'from=2026-13-01&to=2026-12-01',
      'from=2026-02-30&to=2026-03-01',
      'from=2026-11-02&to=2026-11-01',
      'from=2025-01-01&to=2026-01-02',
      // A year JavaScript reads (1 BC) and PostgreSQL does not: refused, never a 500.
      'from=0000-01-01&to=0000-01-02',
      'format=xml',
    ]) {
      for (const report of ['daily', 'retention', 'sessions', 'campaigns', 'revenue']) {
        const r = await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/${report}?${q}`);
        expect([report, q, r.status, r.body.error]).toEqual([report, q, 400, 'bad_request']);
      }
    }
    expect(
      (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/daily?from=0001-01-01&to=0001-01-02`))
        .status,
    ).toBe(200);
    // A default start that would fall before year 1 starts on its first day.
    const early = await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/daily?to=0001-01-05`);
    expect([early.status, early.body.map((d: { day: string }) => d.day)[0]]).toEqual([200, '0001-01-01']);
    expect((await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/revenue?by=week`)).status).toBe(400);
    for (const limit of ['0', '1001', '1.5', 'x'])
      expect(
        (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/campaigns?limit=${limit}`)).status,
      ).toBe(400);
    const unknown = await admin(srv.url, 'GET', `/admin/projects/${randomUUID()}/reports/daily`);
    expect(unknown.status).toBe(404);
    expect(
      (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/daily?from=2025-11-01&to=2026-11-01`))
        .status,
    ).toBe(200);
  });
});

async function campaign(user: string): Promise<[string | null, string | null] | null> {
  const [r] = await db.sql<{ f: string | null; l: string | null }[]>`
    SELECT first_campaign AS f, last_campaign AS l FROM report_users WHERE project_id = ${p.projectId} AND user_id = ${user}`;
  return r === undefined ? null : [r.f, r.l];
}

describe('reports at the default interval', () => {
  it('count an event answered 202 in every report within seconds, not after a clock lag', async () => {
    const s = await startServer(db.url, { REPORTS_EVERY_MS: '1000' });
    try {
      const q = await provision(s.url);
      const day = new Date().toISOString().slice(0, 10);
      const at = new Date().toISOString();
      const opened = ev('7701', at, {
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': 'fresh' },
      });
      const paid = payment('7701', at, `fresh-${randomUUID()}`, 250);
      expect((await postBotApi(s.url, q.token, { events: [opened, paid] })).status).toBe(202);
      const get = async (path: string) =>
        (await admin(s.url, 'GET', `/admin/projects/${q.projectId}/reports/${path}?from=${day}&to=${day}`)).body;
      // Well inside the half minute (and more) the reports stayed behind the clock before.
      const soon = { timeout: 5000, interval: 100 };
      await expect.poll(() => get('daily'), soon).toMatchObject([{ events: 2, activeUsers: 1, newUsers: 1 }]);
      await expect.poll(() => get('revenue'), soon).toMatchObject([{ currency: 'XTR', totalAmount: 250, payments: 1 }]);
      await expect.poll(() => get('campaigns'), soon).toMatchObject([{ campaign: 'fresh', newUsers: 1, payers: 1 }]);
    } finally {
      await s.stop();
    }
  });
});

describe('reports after an upgrade', () => {
  it('reads the events stored before report summaries began from the table, and the later ones from summaries', async () => {
    const d = await createTestDatabase();
    let s = await startServer(d.url);
    try {
      const q = await provision(s.url);
      await s.stop();
      // Rows as an older build left them: no summary, and summarized reads true for rows stored before the column.
      await d.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, billed, summarized)
        SELECT ${q.projectId}, ${q.botId}, gen_random_uuid(), 'message_received', 'message', '2026-11-09T10:00:00Z',
               now(), 8000 + g, 'custom', 'bot_api', true, true
        FROM generate_series(1, 3) g`;
      await d.sql.begin(async (tx) => {
        await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true)`;
        await tx`UPDATE report_watermark SET summaries_since = now() + interval '1 millisecond'`;
      });
      s = await startServer(d.url);
      expect((await postBotApi(s.url, q.token, { events: [ev('8004', '2026-11-09T11:00:00Z')] })).status).toBe(202);
      const daily = async () =>
        (await admin(s.url, 'GET', `/admin/projects/${q.projectId}/reports/daily?from=2026-11-09&to=2026-11-09`))
          .body[0];
      // The older rows' window closes WRITE_TIMEOUT_MS (10 s) behind: a request may wait that long for its commit.
      await expect.poll(daily, { timeout: 30_000 }).toMatchObject({ events: 4, activeUsers: 4, newUsers: 4 });
    } finally {
      await s.stop();
      await d.drop();
    }
  });
});

describe('reports after a backlog of summaries', () => {
  it('folds more summaries than a fold may take (200,000) in several folds, every event counted once', async () => {
    const d = await createTestDatabase();
    const env = { LOG_LEVEL: 'debug', REPORTS_EVERY_MS: '3600000' };
    let s = await startServer(d.url, env);
    try {
      const q = await provision(s.url);
      await s.stop();
      // The aggregator was behind by 30 s while 200,001 commits were stored (ten in each millisecond of 20 s): what an
      // outage of the database leaves, in a few seconds.
      const [wm] = await d.sql.begin(async (tx) => {
        await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true)`;
        return tx<{ at: Date }[]>`
          UPDATE report_watermark SET received_before = date_trunc('milliseconds', now()) - interval '30 seconds'
          RETURNING received_before AS at`;
      });
      const day = utcDay('2026-11-12T10:00:00Z');
      const rows = Array.from({ length: 200_001 }, (_, i) => {
        const at = new Date(wm!.at.getTime() + 1 + Math.floor(i / 10));
        const w = new SummaryWriter(q.projectId, at.toISOString(), 1);
        w.addRecord(42, day, 0, null, null);
        return { received_from: at, received_to: at, summary: Buffer.from(w.bytes()) };
      });
      for (let i = 0; i < rows.length; i += 20_000)
        await d.sql`INSERT INTO report_summaries ${d.sql(rows.slice(i, i + 20_000), 'received_from', 'received_to', 'summary')}`;
      s = await startServer(d.url, env);
      const daily = async () =>
        (await admin(s.url, 'GET', `/admin/projects/${q.projectId}/reports/daily?from=2026-11-12&to=2026-11-12`))
          .body[0];
      await expect.poll(daily, { timeout: 30_000 }).toMatchObject({ events: 200_001, activeUsers: 1, newUsers: 1 });
      const windows = s.output
        .filter((l) => l.includes('report window folded'))
        .map((l) => JSON.parse(l) as { events: number; source: string })
        .filter((w) => w.events > 0);
      expect(windows.length).toBeGreaterThan(1);
      expect(windows.every((w) => w.source === 'summaries' && w.events <= 200_000)).toBe(true);
      expect(windows.reduce((n, w) => n + w.events, 0)).toBe(200_001);
      expect(await d.sql`SELECT 1 FROM report_summaries`).toHaveLength(0);
    } finally {
      await s.stop();
      await d.drop();
    }
  }, 90_000);
});
