// A person's data on request, over real HTTP and PostgreSQL: an erasure removes a user's rows from both month
// partitions, the users table, the quarantine and the report tables and leaves everyone else's (counted before and
// after) and the usage alone; a suppressed user is refused on both endpoints by a second instance too; an erasure
// killed midway finishes after a restart; an export holds exactly what the database holds.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, filedUsers, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, reportsCaughtUp, type TestDatabase } from '../helpers/db.js';
import { createLogger } from '../../src/base/log.js';
import { connect } from '../../src/db/connect.js';
import { REPORTS_FOLD_LOCK } from '../../src/db/locks.js';
import { Eraser } from '../../src/privacy/eraser.js';
import { PrivacyStore } from '../../src/privacy/store.js';
import { readSummary } from '../../src/pipeline/summary.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let second: RunningServer;
let p: Provisioned;
// A suppressing erasure waits 2 × AUTH_CACHE_TTL_MS + WRITE_TIMEOUT_MS before it reads events: 3 s here.
const env = {
  INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
  RATE_LIMIT_BURST: '100000',
  AUTH_CACHE_TTL_MS: '500',
  WRITE_TIMEOUT_MS: '2000',
};

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, env);
  second = await startServer(db.url, env);
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await second?.stop();
  await db?.drop();
});

const webapp = (base: string, user: number, events: Record<string, unknown>[], startParam?: string) =>
  call(`${base}/tg/webapp`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: {
      botId: p.botId,
      auth: {
        initData: makeInitData(signer, {
          messengerBotId: p.messengerBotId,
          user: { id: user, first_name: `U${user}` },
          ...(startParam ? { extra: { start_param: startParam } } : {}),
        }),
      },
      events,
    },
  });
const webappEvent = (over: Record<string, unknown> = {}) => ({
  eventId: randomUUID(),
  eventName: 'app_open',
  eventType: 'interaction',
  eventDate: '2026-11-22T10:00:00Z',
  ...over,
});

/** What the database holds on a user of the project, table by table. */
async function holdings(user: string) {
  const [r] = await db.sql<Record<string, number>[]>`
    SELECT
      (SELECT count(*) FROM events WHERE project_id = ${p.projectId} AND platform_user_id = ${user}::bigint)::int AS events,
      (SELECT count(DISTINCT tableoid) FROM events WHERE project_id = ${p.projectId} AND platform_user_id = ${user}::bigint)::int AS partitions,
      (SELECT count(*) FROM users WHERE project_id = ${p.projectId} AND messenger_user_id = ${user}::bigint)::int AS users,
      (SELECT count(*) FROM quarantine WHERE project_id = ${p.projectId}
         AND (user_id = ${user}::bigint OR event LIKE ${`%"platformUserId":"${user}"%`}))::int AS quarantine,
      (SELECT count(*) FROM report_users WHERE project_id = ${p.projectId} AND user_id = ${user}::bigint)::int AS report_users,
      (SELECT count(*) FROM report_active WHERE project_id = ${p.projectId} AND user_id = ${user}::bigint)::int AS report_active,
      (SELECT count(*) FROM report_payments WHERE project_id = ${p.projectId} AND user_id = ${user}::bigint)::int AS report_payments,
      (SELECT count(*) FROM billing_actions WHERE project_id = ${p.projectId} AND action_key LIKE ${`message:${user}:%`})::int AS billing_actions`;
  return r!;
}

/** An event stored last month, as the service would have stored it then. */
async function storedLastMonth(user: string): Promise<void> {
  await db.sql`
    INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                        platform_user_id, origin, channel, tg, billed)
    VALUES (${p.projectId}, ${p.botId}, ${randomUUID()}, 'message_received', 'message',
            date_trunc('month', now()) - interval '3 days', date_trunc('month', now()) - interval '3 days',
            ${user}::bigint, 'custom', 'bot_api', '{}', true)`;
}

const erasure = async (base: string, id: string) =>
  (await admin(base, 'GET', `/admin/projects/${p.projectId}/erasures/${id}`)).body;

describe('erasure', () => {
  it("removes a user's rows from every table, both months, and leaves other users' rows and the usage as they were", async () => {
    for (const user of ['2001', '2002']) {
      const start = serverEvent({
        platformUserId: user,
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': `camp_${user}` },
      });
      const paid = serverEvent({
        platformUserId: user,
        eventOrigin: 'platform',
        eventName: 'successful_payment',
        eventType: 'payment',
        propsString: { 'tg.currency': 'XTR', 'tg.telegram_payment_charge_id': `charge-${user}` },
        propsLong: { 'tg.total_amount': 50 },
      });
      // Rejected, and naming another user first in its body (a nested key): it is this user's all the same.
      const broken = {
        propsString: { platformUserId: '9999' },
        ...serverEvent({ platformUserId: user, eventDate: 'not a date' }),
      };
      const r = await postBotApi(srv.url, p.token, {
        events: [
          start,
          paid,
          broken,
          // A message in the private chat with the user: its billing key names the chat, which is the user.
          serverEvent({
            platformUserId: user,
            eventOrigin: 'platform',
            propsLong: { 'tg.chat_id': Number(user), 'tg.message_id': 7 },
          }),
        ],
        users: [{ messengerUserId: Number(user), username: `u${user}`, firstName: 'Name' }],
      });
      expect(r.status).toBe(202);
      expect((await webapp(srv.url, Number(user), [webappEvent(), webappEvent({ eventDate: 'never' })])).status).toBe(
        202,
      );
      await storedLastMonth(user);
    }
    await expect.poll(async () => (await holdings('2002')).report_users, { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => (await holdings('2001')).report_active, { timeout: 10_000 }).toBeGreaterThan(0);
    // Everything folded (the rows stored by hand last month too), so the other user's rows stand from here on.
    await expect.poll(() => reportsCaughtUp(db.sql), { timeout: 10_000 }).toBe(true);
    const before = await holdings('2001');
    const others = await holdings('2002');
    expect(before).toMatchObject({
      events: 5,
      partitions: 2,
      users: 1,
      quarantine: 2,
      report_users: 1,
      report_payments: 1,
      billing_actions: 1,
    });
    const usage = (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body;

    const r = await admin(srv.url, 'POST', `/admin/projects/${p.projectId}/erasures`, { userIds: ['2001', '2001'] });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: 'pending', userIds: ['2001'], suppress: false, userCount: 1 });
    expect(typeof r.body.createdAt).toBe('string');
    await expect.poll(async () => (await erasure(srv.url, r.body.erasureId)).status, { timeout: 20_000 }).toBe('done');
    const done = await erasure(srv.url, r.body.erasureId);
    expect(done).toMatchObject({
      deleted: { events: 5, users: 1, quarantine: 2, lakeFiles: expect.any(Number) },
      // Not suppressed: the ids are not kept, only their count and digest.
      userIds: null,
      userCount: 1,
      digest: `sha256:${createHash('sha256').update('2001').digest('hex')}`,
    });
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
    expect(await holdings('2001')).toEqual({
      events: 0,
      partitions: 0,
      users: 0,
      quarantine: 0,
      report_users: 0,
      report_active: 0,
      report_payments: 0,
      billing_actions: 0,
    });
    expect(await holdings('2002')).toEqual(others);
    // A ledger, not a count of rows: the month's usage stands.
    expect((await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body).toEqual(usage);
    // The campaigns report keeps its numbers (aggregates are counts), but nothing names the user.
    const campaigns = (
      await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/campaigns?from=2026-11-01&to=2026-11-30`)
    ).body;
    expect(campaigns.map((c: { campaign: string | null }) => c.campaign)).toContain('camp_2001');
  });

  it('exports exactly what the database holds on a user, as NDJSON ending with the counts', async () => {
    const res = await fetch(`${srv.url}/admin/projects/${p.projectId}/users/2002/export`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    const of = (type: string) => lines.filter((l) => l.type === type).map((l) => l.data);
    const ids = await db.sql<{ event_id: string }[]>`
      SELECT event_id FROM events WHERE project_id = ${p.projectId} AND platform_user_id = 2002`;
    expect(
      of('event')
        .map((e) => e.event_id)
        .sort(),
    ).toEqual(ids.map((r) => r.event_id).sort());
    // The webapp session's profile, signed, replaced the one the bot sent.
    expect(of('profile')).toEqual([expect.objectContaining({ first_name: 'U2002', messenger_user_id: 2002 })]);
    expect(of('campaign')).toEqual([expect.objectContaining({ firstCampaign: 'camp_2002' })]);
    expect(of('quarantined')).toHaveLength((await holdings('2002')).quarantine);
    const days = await db.sql<{ day: string }[]>`
      SELECT day::text FROM report_active WHERE project_id = ${p.projectId} AND user_id = 2002 ORDER BY day`;
    expect(of('active_day')).toEqual(days.map((d) => d.day));
    expect(of('payment')).toEqual([expect.objectContaining({ kind: 'payment', chargeKey: 'charge-2002', amount: 50 })]);
    expect(of('billing_key')).toEqual(['message:2002:7']);
    expect(lines.at(-1)).toEqual({
      type: 'end',
      data: {
        profile: 1,
        campaign: 1,
        suppression: 0,
        activeDays: days.length,
        payments: 1,
        billingKeys: 1,
        events: ids.length,
        quarantined: 2,
      },
    });
    const nobody = await fetch(`${srv.url}/admin/projects/${p.projectId}/users/2001/export`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect((await nobody.text()).trim().split('\n')).toHaveLength(1);
  });

  it('suppresses on both endpoints and on another instance, drops profiles, and lifts', async () => {
    const r = await admin(srv.url, 'POST', `/admin/projects/${p.projectId}/erasures`, {
      userIds: ['3001'],
      suppress: true,
    });
    expect(r.status).toBe(202);
    const billed = async () => (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body.eventsBilled;
    const billedBefore = await billed();
    // The other instance learns it from the database within 2 × AUTH_CACHE_TTL_MS.
    const refused = async () => {
      const a = await postBotApi(second.url, p.token, {
        events: [serverEvent({ platformUserId: '3001' })],
        users: [{ messengerUserId: 3001, username: 'gone' }],
      });
      return a.body.diagnostics?.map((d: { code: string; path: string }) => `${d.code} ${d.path}`);
    };
    await expect.poll(refused, { timeout: 5000, interval: 100 }).toEqual(['user_suppressed platform_user_id']);
    // Every event rejected: 400, with the usual body.
    const w = await webapp(second.url, 3001, [webappEvent(), webappEvent()]);
    expect(w.status).toBe(400);
    expect(w.body).toMatchObject({ accepted: 0, rejected: 2 });
    expect(w.body.diagnostics.map((d: { code: string; path: string }) => `${d.code} ${d.path}`)).toEqual([
      'user_suppressed auth.initData.user',
      'user_suppressed auth.initData.user',
    ]);
    // Their neighbours in the same request are stored.
    const mixed = await postBotApi(srv.url, p.token, {
      events: [serverEvent({ platformUserId: '3001' }), serverEvent({ platformUserId: '3002' })],
    });
    expect(mixed.body).toMatchObject({ accepted: 1, rejected: 1 });
    // Whatever else is wrong with their events, nothing is quarantined.
    const broken = await postBotApi(srv.url, p.token, {
      events: [serverEvent({ platformUserId: '3001', eventDate: 'x' })],
    });
    expect(broken.body.diagnostics.map((d: { code: string }) => d.code)).toEqual(['user_suppressed']);
    expect(await holdings('3001')).toMatchObject({ events: 0, users: 0, quarantine: 0 });
    expect(await billed()).toBe(billedBefore + 1);
    await expect.poll(async () => (await erasure(srv.url, r.body.erasureId)).status, { timeout: 20_000 }).toBe('done');
    // Suppressed: the ids are kept with the erasure.
    expect((await erasure(srv.url, r.body.erasureId)).userIds).toEqual(['3001']);

    const list = await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/suppressions`);
    expect(list.body).toEqual({
      items: [expect.objectContaining({ userId: '3001', erasureId: r.body.erasureId })],
      next: null,
    });
    expect((await admin(srv.url, 'DELETE', `/admin/projects/${p.projectId}/suppressions/3001`)).status).toBe(204);
    expect((await admin(srv.url, 'DELETE', `/admin/projects/${p.projectId}/suppressions/3001`)).status).toBe(404);
    expect((await erasure(srv.url, r.body.erasureId)).userIds).toBeNull();
    const accepted = async () =>
      (await postBotApi(second.url, p.token, { events: [serverEvent({ platformUserId: '3001' })] })).body.accepted;
    await expect.poll(accepted, { timeout: 5000, interval: 100 }).toBe(1);
  });

  it("refuses to replay a suppressed user's quarantined events", async () => {
    const event = serverEvent({ platformUserId: '3101' });
    await db.sql`
      INSERT INTO quarantine (project_id, bot_id, channel, connection_id, user_id, received_at, event_id, codes,
                              diagnostics, event, truncated)
      VALUES (${p.projectId}, ${p.botId}, 'bot_api', ${`token:${p.tokenId}`}, NULL, now(), ${event.eventId},
              '{schema_violation}', '[]', ${JSON.stringify(event)}, false)`;
    const r = await admin(srv.url, 'POST', `/admin/projects/${p.projectId}/erasures`, {
      userIds: ['3101'],
      suppress: true,
    });
    // Before the eraser starts (it waits for every instance to refuse the user): the replay refuses them itself.
    const replay = await admin(srv.url, 'POST', `/admin/projects/${p.projectId}/quarantine/replay`, {});
    expect(replay.body).toMatchObject({ accepted: 0 });
    expect((await holdings('3101')).events).toBe(0);
    await expect.poll(async () => (await erasure(srv.url, r.body.erasureId)).status, { timeout: 20_000 }).toBe('done');
    expect(await holdings('3101')).toMatchObject({ events: 0, quarantine: 0 });
  });

  it('waits for a report fold that holds its lock longer than a step may wait, without failing a step', async () => {
    const user = 7_700_001;
    expect((await webapp(srv.url, user, [webappEvent()])).status).toBe(202);
    // A fold as long as a restarted instance's first one could be: 7 s, past the step's 5 s lock timeout.
    const conn = await db.sql.reserve();
    await conn`BEGIN`;
    await conn`SELECT pg_advisory_xact_lock(${REPORTS_FOLD_LOCK})`;
    const released = new Promise((res) => setTimeout(res, 7000)).then(() => conn`COMMIT`);
    try {
      const r = await admin(srv.url, 'POST', `/admin/projects/${p.projectId}/erasures`, { userIds: [String(user)] });
      expect(r.status).toBe(202);
      let e: { status: string } = { status: 'pending' };
      for (let i = 0; i < 200 && e.status !== 'done' && e.status !== 'failed'; i++) {
        await new Promise((res) => setTimeout(res, 100));
        e = (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/erasures/${r.body.erasureId}`)).body;
      }
      expect(e.status).toBe('done');
      // No step failed on the way (a failed one is retried, and its count reset once a step passes: the log tells).
      const failed = [...srv.logs, ...second.logs].filter(
        (l) => l.erasureId === r.body.erasureId && l.msg === 'erasure step failed; retried later',
      );
      expect(failed).toEqual([]);
    } finally {
      await released;
      conn.release();
    }
  }, 30_000);

  it('lists erasures newest first in pages, and refuses what it cannot take', async () => {
    const page1 = await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/erasures?limit=1`);
    expect(page1.body.items).toHaveLength(1);
    expect(page1.body.items[0].userCount).toBe(1);
    const page2 = await admin(
      srv.url,
      'GET',
      `/admin/projects/${p.projectId}/erasures?limit=1&before=${page1.body.next}`,
    );
    expect(page2.body.items).toHaveLength(1);
    expect(Date.parse(page2.body.items[0].createdAt)).toBeLessThanOrEqual(Date.parse(page1.body.items[0].createdAt));
    expect(page2.body.items[0].erasureId).not.toBe(page1.body.items[0].erasureId);
    const base = `/admin/projects/${p.projectId}`;
    for (const body of [
      {},
      { userIds: [] },
      { userIds: ['0'] },
      { userIds: ['abc'] },
      { userIds: ['9223372036854775808'] },
      { userIds: Array.from({ length: 5001 }, (_, i) => String(i + 1)) },
      { userIds: ['1'], other: true },
    ])
      expect([
        JSON.stringify(body).slice(0, 40),
        (await admin(srv.url, 'POST', `${base}/erasures`, body)).status,
      ]).toEqual([JSON.stringify(body).slice(0, 40), 400]);
    expect((await admin(srv.url, 'GET', `${base}/erasures?before=nonsense`)).status).toBe(400);
    expect((await admin(srv.url, 'GET', `${base}/erasures/${randomUUID()}`)).status).toBe(404);
    expect((await admin(srv.url, 'GET', `${base}/erasures/not-an-id`)).status).toBe(404);
    expect((await admin(srv.url, 'GET', `${base}/users/abc/export`)).status).toBe(400);
    expect((await admin(srv.url, 'GET', `/admin/projects/${randomUUID()}/erasures`)).status).toBe(404);
  });
});

describe('erasure before the reports fold', () => {
  it("takes the user out of the commits' report summaries still waiting for the fold: the fold after it counts the others", async () => {
    const d = await createTestDatabase();
    // Folding once at start, then hourly: the summaries of this test's commits wait.
    let a = await startServer(d.url, { ...env, REPORTS_EVERY_MS: '3600000' });
    try {
      const q = await provision(a.url);
      const day = '2026-11-12';
      const start = (user: string) =>
        serverEvent({
          platformUserId: user,
          eventDate: `${day}T10:00:00Z`,
          eventOrigin: 'platform',
          eventName: 'command',
          propsString: { 'tg.command': 'start', 'tg.start_param': `camp_${user}` },
        });
      expect((await postBotApi(a.url, q.token, { events: [start('7001'), start('7001'), start('7002')] })).status).toBe(
        202,
      );
      const summarized = async () => {
        const users: number[] = [];
        for (const { summary } of await d.sql<{ summary: Buffer }[]>`SELECT summary FROM report_summaries`)
          readSummary(
            summary,
            () => true,
            (user) => users.push(user),
          );
        return users.sort();
      };
      expect(await summarized()).toEqual([7001, 7001, 7002]);
      const r = await admin(a.url, 'POST', `/admin/projects/${q.projectId}/erasures`, { userIds: ['7001'] });
      const status = async () =>
        (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/erasures/${r.body.erasureId}`)).body.status;
      await expect.poll(status, { timeout: 30_000 }).toBe('done');
      expect(await summarized()).toEqual([7002]);

      await a.stop();
      a = await startServer(d.url, env);
      const report = async (name: string) =>
        (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/reports/${name}?from=${day}&to=${day}`)).body;
      await expect
        .poll(async () => (await report('daily'))[0], { timeout: 10_000 })
        .toMatchObject({ events: 1, activeUsers: 1, newUsers: 1 });
      expect(await report('campaigns')).toMatchObject([{ campaign: 'camp_7002', newUsers: 1, activeUsers: 1 }]);
      expect(await d.sql`SELECT user_id::text AS u FROM report_users WHERE project_id = ${q.projectId}`).toEqual([
        { u: '7002' },
      ]);
    } finally {
      await a.stop();
      await d.drop();
    }
  });
});

describe('erasure of a user the reports aggregator remembers', () => {
  it('counts the user as new and active again when they come back, as if nothing had been remembered', async () => {
    // One instance: its aggregator folds every window, and remembers the users it filed between them.
    const d = await createTestDatabase();
    const a = await startServer(d.url, env);
    try {
      const q = await provision(a.url);
      const day = '2026-11-13';
      const daily = async () =>
        (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/reports/daily?from=${day}&to=${day}`)).body[0];
      const send = async () =>
        expect(
          (
            await postBotApi(a.url, q.token, {
              events: [serverEvent({ platformUserId: '7101', eventDate: `${day}T10:00:00Z` })],
            })
          ).status,
        ).toBe(202);
      for (const events of [1, 2]) {
        await send();
        await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events, activeUsers: 1, newUsers: 1 });
      }
      // The second time, the user was remembered.
      expect(await filedUsers(a.url)).toEqual({ hits: 1, misses: 1 });
      const r = await admin(a.url, 'POST', `/admin/projects/${q.projectId}/erasures`, { userIds: ['7101'] });
      await expect
        .poll(
          async () =>
            (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/erasures/${r.body.erasureId}`)).body.status,
          {
            timeout: 30_000,
          },
        )
        .toBe('done');
      // The counts stay; who the user was to the reports is gone, so they are new again (migration 13's count).
      await send();
      await expect.poll(daily, { timeout: 10_000 }).toMatchObject({ events: 3, activeUsers: 2, newUsers: 2 });
      expect(await filedUsers(a.url)).toEqual({ hits: 1, misses: 2 });
    } finally {
      await a.stop();
      await d.drop();
    }
  });
});

describe('erasure across a crash', () => {
  it('finishes after kill -9 midway, deleting each row once', async () => {
    const d = await createTestDatabase();
    // One user per step: the erasure of forty users takes forty steps in each partition, and the kill lands among them.
    const slow = { ...env, ERASURE_USERS_PER_STEP: '1' };
    let a = await startServer(d.url, slow);
    try {
      const q = await provision(a.url);
      await d.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, tg, billed)
        SELECT ${q.projectId}, ${q.botId}, gen_random_uuid(), 'message_received', 'message', now(), now(),
               CASE WHEN g % 10 = 0 THEN 4000 + g % 40 ELSE 5000 END, 'custom', 'bot_api', '{}', true
        FROM generate_series(1, 60000) g`;
      const users = Array.from({ length: 40 }, (_, i) => String(4000 + i));
      const r = await admin(a.url, 'POST', `/admin/projects/${q.projectId}/erasures`, { userIds: users });
      const progress = async () =>
        (await d.sql<{ from: number | null }[]>`SELECT (step->>'from')::int AS from FROM erasures`)[0]?.from ?? 0;
      await expect.poll(progress, { timeout: 20_000, interval: 10 }).toBeGreaterThan(5);
      await a.kill();
      expect(await progress()).toBeLessThan(40);
      a = await startServer(d.url, slow);
      const status = async () =>
        (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/erasures/${r.body.erasureId}`)).body;
      await expect.poll(async () => (await status()).status, { timeout: 60_000, interval: 200 }).toBe('done');
      expect((await status()).deleted.events).toBe(6000);
      const [left] = await d.sql<{ a: number; b: number }[]>`
        SELECT count(*) FILTER (WHERE platform_user_id BETWEEN 4000 AND 4039)::int AS a,
               count(*) FILTER (WHERE platform_user_id = 5000)::int AS b
        FROM events`;
      expect(left).toEqual({ a: 0, b: 54000 });
    } finally {
      await a.stop();
      await d.drop();
    }
  });

  it('reads only the block ranges that may hold the users, never the whole partition', async () => {
    const d = await createTestDatabase();
    // No report fold meanwhile: the partition's reads are the eraser's.
    const a = await startServer(d.url, { ...env, REPORTS_EVERY_MS: '3600000' });
    try {
      const q = await provision(a.url);
      // 300,000 rows of other users, the erased user's ten among them at one place, summarized as a VACUUM leaves them:
      // a scan of the partition would read all of its pages. (Marked as in the reports already, so that no fold reads
      // them meanwhile.)
      await d.sql`
        INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                            platform_user_id, origin, channel, tg, billed, summarized)
        SELECT ${q.projectId}, ${q.botId}, gen_random_uuid(), 'message_received', 'message', now(), now(),
               CASE WHEN g BETWEEN 150000 AND 150009 THEN 4242 ELSE 100000 + g END, 'custom', 'bot_api', '{}', true,
               true
        FROM generate_series(1, 300000) g`;
      const part = (
        await d.sql<{ name: string }[]>`SELECT to_char(now() AT TIME ZONE 'UTC', '"events_"YYYY_MM') AS name`
      )[0]!.name;
      // The VACUUM's own reads reach the statistics now, not during the erasure.
      const own = await d.sql.reserve();
      try {
        await own.unsafe(`VACUUM ANALYZE ${part}`);
        await own`SELECT pg_stat_force_next_flush()`;
        await own`SELECT 1`;
      } finally {
        own.release();
      }
      const heapRead = async () =>
        (
          await d.sql<{ read: number }[]>`
            SELECT (heap_blks_read + heap_blks_hit)::int AS read FROM pg_statio_user_tables WHERE relname = ${part}`
        )[0]!.read;
      const [{ pages }] = await d.sql<
        { pages: number }[]
      >`SELECT (pg_relation_size(${part}::regclass) / 8192)::int AS pages`;
      const before = await heapRead();
      const r = await admin(a.url, 'POST', `/admin/projects/${q.projectId}/erasures`, { userIds: ['4242'] });
      const status = async () =>
        (await admin(a.url, 'GET', `/admin/projects/${q.projectId}/erasures/${r.body.erasureId}`)).body;
      await expect.poll(async () => (await status()).status, { timeout: 30_000, interval: 200 }).toBe('done');
      expect((await status()).deleted.events).toBe(10);
      // Statistics reach the view within ten seconds of the eraser's transactions.
      await expect.poll(heapRead, { timeout: 20_000, interval: 500 }).toBeGreaterThan(before);
      expect(pages).toBeGreaterThan(2000);
      expect((await heapRead()) - before).toBeLessThan(200);
      const [left] = await d.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE platform_user_id = 4242`;
      expect(left!.n).toBe(0);
    } finally {
      await a.stop();
      await d.drop();
    }
  }, 60_000);
  it('summarizes the ranges rows filled while it works before each slice, so no slice reads them whole', async () => {
    const d = await createTestDatabase();
    const a = await startServer(d.url, { ...env, REPORTS_EVERY_MS: '3600000' });
    let q: Provisioned;
    try {
      q = await provision(a.url);
    } finally {
      await a.stop();
    }
    // The eraser driven a step at a time, on one connection whose statistics reach the view after each step.
    const own = connect(d.url, { max: 1, name: 'eraser under test' });
    const eraser = new Eraser(own, { usersPerStep: 1, pollMs: 3_600_000, settleMs: 0 }, createLogger('error'));
    // Loaded on a connection of its own whose statistics reach the view at once, not during a measured step.
    const loader = await d.sql.reserve();
    const loaded = async () => {
      await loader`SELECT pg_stat_force_next_flush()`;
      await loader`SELECT 1`;
    };
    // 300,000 rows from `first` on, of other users but for ten rows of `user` (when given) at the middle.
    const rows = (first: number, user: number | null) => loader`
      INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
                          platform_user_id, origin, channel, tg, billed, summarized)
      SELECT ${q.projectId}, ${q.botId}, gen_random_uuid(), 'message_received', 'message', now(), now(),
             CASE WHEN ${user}::bigint IS NOT NULL AND g BETWEEN 150000 AND 150009 THEN ${user}::bigint
                  ELSE ${first}::bigint + g END, 'custom', 'bot_api', '{}', true, true
      FROM generate_series(1, 300000) g`;
    try {
      const part = (
        await d.sql<{ name: string }[]>`SELECT to_char(now() AT TIME ZONE 'UTC', '"events_"YYYY_MM') AS name`
      )[0]!.name;
      // Only the eraser reads the partition: no autovacuum summarizing the new rows meanwhile.
      await d.sql.unsafe(`ALTER TABLE ${part} SET (autovacuum_enabled = false)`);
      await rows(1_000_000, 9001);
      await rows(2_000_000, 9002);
      await rows(3_000_000, 9003);
      await loader.unsafe(`VACUUM ANALYZE ${part}`);
      await loaded();
      const erasure = await new PrivacyStore(d.sql).request(q!.projectId, ['9001', '9002', '9003'], false);
      const deleted = async () =>
        Number(
          (
            await d.sql<
              { n: string }[]
            >`SELECT deleted_events::text AS n FROM erasures WHERE erasure_id = ${erasure.erasureId}`
          )[0]!.n,
        );
      const stepUntil = async (events: number) => {
        while ((await deleted()) < events) {
          expect(await eraser.step()).toBe(true);
          await own`SELECT pg_stat_force_next_flush()`;
          await own`SELECT 1`;
        }
      };
      const heapRead = async () =>
        (
          await d.sql<{ read: number }[]>`
            SELECT (heap_blks_read + heap_blks_hit)::int AS read FROM pg_statio_user_tables WHERE relname = ${part}`
        )[0]!.read;
      const pages = async () =>
        (await d.sql<{ n: number }[]>`SELECT (pg_relation_size(${part}::regclass) / 8192)::int AS n`)[0]!.n;

      await stepUntil(10);
      // Rows arrive while the erasure is at work, in ranges nothing has summarized.
      const summarizedPages = await pages();
      await rows(4_000_000, null);
      await loaded();
      expect((await pages()) - summarizedPages).toBeGreaterThan(2000);
      await stepUntil(20);
      const before = await heapRead();
      await stepUntil(30);
      expect((await heapRead()) - before).toBeLessThan(200);
      const [left] = await d.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM events WHERE platform_user_id IN (9001, 9002, 9003)`;
      expect(left!.n).toBe(0);
    } finally {
      loader.release();
      await own.end({ timeout: 1 });
      await d.drop();
    }
  }, 90_000);
});
