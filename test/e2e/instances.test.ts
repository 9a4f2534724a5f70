// Two instances of the service on one PostgreSQL, as behind a load balancer: deduplication and the
// billing of messenger actions stay exact across them, the allowance holds across them (exceeded by
// at most one batch per instance), and a change made through one instance's admin API is in force
// on the other within 2 × AUTH_CACHE_TTL_MS.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, type Res, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
const TTL_MS = 300;
/** The promise is 2 × AUTH_CACHE_TTL_MS (600 ms); the bound leaves room for two busy shared cores. */
const BOUND_MS = 3000;
const ENV = {
  AUTH_CACHE_TTL_MS: String(TTL_MS),
  INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
  RATE_LIMIT_BURST: '1000000',
  RATE_LIMIT_PER_MIN: '1000000',
  AUTH_FAILURE_BURST: '100000',
};

let db: TestDatabase;
let a: RunningServer;
let b: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  [a, b] = await Promise.all([startServer(db.url, ENV), startServer(db.url, ENV)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await db?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One webapp event for the provisioned bot's user, with fresh initData. */
const webEvent = () => ({
  eventId: randomUUID(),
  eventName: 'button_click',
  eventDate: new Date().toISOString(),
  eventType: 'interaction',
});
const postWebapp = (srv: RunningServer, p: Provisioned): Promise<Res> =>
  call(`${srv.url}/tg/webapp`, {
    method: 'POST',
    body: {
      botId: p.botId,
      auth: { initData: makeInitData(signer, { messengerBotId: p.messengerBotId }) },
      events: [webEvent()],
    },
  });
const postOne = (srv: RunningServer, token: string) => postBotApi(srv.url, token, { events: [serverEvent()] });

async function newToken(botId: string): Promise<{ token: string; tokenId: string }> {
  const t = await admin(a.url, 'POST', `/admin/bots/${botId}/tokens`);
  expect(t.status, t.text).toBe(201);
  return { token: t.body.token, tokenId: t.body.tokenId };
}

async function usage(
  srv: RunningServer,
  projectId: string,
): Promise<{ eventsBilled: number; eventsStored: number; eventAllowance: number | null }> {
  const u = await admin(srv.url, 'GET', `/admin/projects/${projectId}/usage`);
  expect(u.status, u.text).toBe(200);
  return u.body;
}

describe('exact across instances', () => {
  it('the same eventIds sent to both instances at once are stored once, billed once, and accepted by both', async () => {
    const p = await provision(a.url);
    const ids = new Set<string>();
    for (let round = 0; round < 20; round++) {
      const events = Array.from({ length: 50 }, () => serverEvent());
      for (const e of events) ids.add(e.eventId);
      const answers = await Promise.all([
        postBotApi(a.url, p.token, { events }),
        postBotApi(b.url, p.token, { events }),
      ]);
      for (const r of answers) {
        expect(r.status, r.text).toBe(202);
        expect(r.body).toMatchObject({ accepted: 50, rejected: 0, not_consumed_duplicated: 0, stored_not_billed: 0 });
      }
    }
    const [{ rows, distinct, billed }] = await db.sql`
      SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct, count(*) FILTER (WHERE billed)::int AS billed
      FROM events WHERE project_id = ${p.projectId}`;
    expect({ rows, distinct, billed }).toEqual({ rows: ids.size, distinct: ids.size, billed: ids.size });
    // Both instances read the same ledger.
    for (const srv of [a, b])
      expect(await usage(srv, p.projectId)).toMatchObject({ eventsBilled: ids.size, eventsStored: ids.size });
  });

  it('a messenger action reported at once through two instances by two tokens: one report by the non-owner is free, the rest billed', async () => {
    const p = await provision(a.url);
    const second = await newToken(p.botId);
    const rounds = 8;
    const sent: { round: number; tokenId: string; ids: string[] }[] = [];
    let stored = 0;
    for (let round = 0; round < rounds; round++) {
      const updateId = 500_000 + round;
      const ev = () => serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.update_id': updateId } });
      // Token 1 on instance A; the same action under new eventIds from token 2 on instance B, at the same moment.
      const reqs = [
        { srv: a, token: p.token, tokenId: p.tokenId, events: [ev()] },
        { srv: b, token: second.token, tokenId: second.tokenId, events: [ev(), ev()] },
        { srv: b, token: second.token, tokenId: second.tokenId, events: [ev()] },
        { srv: b, token: second.token, tokenId: second.tokenId, events: [ev(), ev(), ev()] },
      ];
      const answers = await Promise.all(reqs.map((q) => postBotApi(q.srv.url, q.token, { events: q.events })));
      for (const [i, r] of answers.entries()) {
        expect(r.status, r.text).toBe(202);
        expect(r.body.accepted).toBe(reqs[i]!.events.length);
        sent.push({ round, tokenId: reqs[i]!.tokenId, ids: reqs[i]!.events.map((e) => e.eventId) });
        stored += reqs[i]!.events.length;
      }
      expect(
        answers.reduce((n, r) => n + r.body.stored_not_billed, 0),
        `round ${round}: ${answers.map((r) => r.body.stored_not_billed).join(',')}`,
      ).toBe(1);
    }
    // In the database: per action one unbilled event, reported by the connection that does not own it.
    const owners = new Map(
      (await db.sql`SELECT action_key, connection_id FROM billing_actions WHERE project_id = ${p.projectId}`).map(
        (r) => [r.action_key as string, r.connection_id as string],
      ),
    );
    const unbilled = new Set(
      (await db.sql`SELECT event_id FROM events WHERE project_id = ${p.projectId} AND NOT billed`).map(
        (r) => r.event_id as string,
      ),
    );
    expect(unbilled.size).toBe(rounds);
    for (let round = 0; round < rounds; round++) {
      const owner = owners.get(`update:${500_000 + round}`);
      expect(owner === `token:${p.tokenId}` || owner === `token:${second.tokenId}`).toBe(true);
      const free = sent
        .filter((s) => s.round === round)
        .flatMap((s) => s.ids.filter((id) => unbilled.has(id)).map(() => s.tokenId));
      expect(free).toHaveLength(1);
      expect(`token:${free[0]}`).not.toBe(owner);
    }
    expect(await usage(b, p.projectId)).toMatchObject({ eventsStored: stored, eventsBilled: stored - rounds });
  });
});

describe('quota across instances', () => {
  // With 1000, the first lease (at least 1000 events) takes it all; with 2500 both instances hold room.
  it.each([
    { allowance: 1000, requests: 30 },
    { allowance: 2500, requests: 40 },
  ])(
    'allowance $allowance, $requests concurrent requests of 100 new events over both instances: at most one batch over per instance, 202s are what is billed',
    async ({ allowance, requests }) => {
      const p = await provision(a.url, { eventAllowance: allowance });
      const started = Date.now();
      interface Outcome {
        status: number;
        attempts: number;
        ids: string[];
        accepted?: number;
        error?: string;
      }
      // A client honouring the retry rules: 503 with Retry-After is retried after that delay with the same
      // eventIds; 202 and 402 are final (anything else is reported as it is).
      const send = async (i: number): Promise<Outcome> => {
        const srv = i % 2 === 0 ? a : b;
        const events = Array.from({ length: 100 }, () => serverEvent());
        const ids = events.map((e) => e.eventId);
        for (let attempts = 1; ; attempts++) {
          const r = await postBotApi(srv.url, p.token, { events });
          const retryAfter = r.headers.get('retry-after');
          if (r.status === 503 && retryAfter !== null && Date.now() - started < 40_000) {
            await sleep(Number(retryAfter) * 1000);
            continue;
          }
          return { status: r.status, attempts, ids, accepted: r.body?.accepted, error: r.body?.error };
        }
      };
      const outcomes = await Promise.all(Array.from({ length: requests }, (_, i) => send(i)));
      const statuses = outcomes.map((o) => o.status);
      expect(
        statuses.filter((s) => s !== 202 && s !== 402),
        JSON.stringify(outcomes.map(({ ids: _, ...o }) => o)),
      ).toEqual([]);
      const ok = outcomes.filter((o) => o.status === 202);
      const refused = outcomes.filter((o) => o.status === 402);
      for (const o of refused) expect(o.error).toBe('allowance_exhausted');
      for (const o of ok) expect(o.accepted).toBe(100);
      const u = await usage(a, p.projectId);
      // 402 only once the allowance is reached; past it by at most one batch per instance.
      expect(u.eventsBilled).toBeGreaterThanOrEqual(allowance);
      expect(u.eventsBilled).toBeLessThanOrEqual(allowance + 2 * 100);
      // The 202s' events are exactly what is stored and billed; nothing of a 402 is stored.
      const okIds = ok.flatMap((o) => o.ids);
      expect(u.eventsBilled).toBe(okIds.length);
      expect(u.eventsStored).toBe(okIds.length);
      const [{ n, billed }] =
        await db.sql`SELECT count(*)::int AS n, count(*) FILTER (WHERE billed)::int AS billed FROM events WHERE project_id = ${p.projectId}`;
      expect({ n, billed }).toEqual({ n: okIds.length, billed: okIds.length });
      const [{ stray }] =
        await db.sql`SELECT count(*)::int AS stray FROM events WHERE project_id = ${p.projectId} AND event_id = ANY(${refused.flatMap((o) => o.ids)}::uuid[])`;
      expect(stray).toBe(0);
    },
  );

  it('an allowance lowered through A holds on B once B has read it: a burst on B exceeds it by at most one batch per instance', async () => {
    const p = await provision(a.url, { eventAllowance: 1_000_000 });
    // B has admitted events under the old allowance (and so holds a lease of it).
    expect((await postOne(b, p.token)).status).toBe(202);
    expect((await admin(a.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 101 })).status).toBe(200);
    const changed = Date.now();
    // Past twice the TTL, one request makes B re-read the plan before it answers (2 billed of 101 now; between one
    // and two TTLs it would re-read in the background, and a slow read let the burst in on the old lease), then
    // the burst comes.
    await sleep(2 * TTL_MS + 50);
    expect((await postOne(b, p.token)).status).toBe(202);
    await sleep(50);
    const burst = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const events = Array.from({ length: 50 }, () => serverEvent());
        for (;;) {
          const r = await postBotApi(b.url, p.token, { events });
          if (r.status === 503 && r.headers.get('retry-after') !== null && Date.now() - changed < 20_000) {
            await sleep(Number(r.headers.get('retry-after')) * 1000);
            continue;
          }
          return r.status;
        }
      }),
    );
    expect(burst.filter((s) => s !== 202 && s !== 402)).toEqual([]);
    const u = await usage(a, p.projectId);
    expect(
      u.eventsBilled,
      `billed ${u.eventsBilled} of an allowance of 101; ${burst.filter((s) => s === 202).length} of 20 batches of 50 admitted by B`,
    ).toBeLessThanOrEqual(101 + 2 * 50);
  });
});

/**
 * Polls `probe` against instance B (every ~25 ms) until the change applies; returns how long that
 * took after the change was made, or Infinity when it did not apply within twice the bound.
 */
async function untilApplied(probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < 2 * BOUND_MS) {
    if (await probe()) return Date.now() - started;
    await sleep(25);
  }
  return Infinity;
}

/** After it applied, it keeps applying (no instance or connection serving the old state). */
async function stays(probe: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 5; i++) expect(await probe()).toBe(true);
}

const is = (r: Res, status: number, error?: string) =>
  r.status === status && (error === undefined || r.body?.error === error);

describe(`changes made through instance A reach instance B within 2 × AUTH_CACHE_TTL_MS (${2 * TTL_MS} ms; asserted within ${BOUND_MS} ms)`, () => {
  it('token revocation: 401 on B', async () => {
    const p = await provision(a.url);
    expect((await postOne(b, p.token)).status).toBe(202);
    expect((await admin(a.url, 'DELETE', `/admin/tokens/${p.tokenId}`)).status).toBe(204);
    const probe = async () => is(await postOne(b, p.token), 401, 'api_key_invalid');
    expect(await untilApplied(probe)).toBeLessThan(BOUND_MS);
    await stays(probe);
  });

  it("the bot's apiIngest switch: 403 api_ingest_disabled on B, and 202 again once switched back on", async () => {
    const p = await provision(a.url);
    expect((await postOne(b, p.token)).status).toBe(202);
    expect((await admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { apiIngest: false })).status).toBe(200);
    const off = async () => is(await postOne(b, p.token), 403, 'api_ingest_disabled');
    expect(await untilApplied(off)).toBeLessThan(BOUND_MS);
    await stays(off);
    expect((await admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { apiIngest: true })).status).toBe(200);
    const on = async () => (await postOne(b, p.token)).status === 202;
    expect(await untilApplied(on)).toBeLessThan(BOUND_MS);
  });

  it("the bot's miniAppIngest switch: 409 miniapp_ingest_disabled on B's webapp endpoint", async () => {
    const p = await provision(a.url);
    const warm = await postWebapp(b, p);
    expect(warm.status, warm.text).toBe(202);
    expect((await admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { miniAppIngest: false })).status).toBe(200);
    const probe = async () => is(await postWebapp(b, p), 409, 'miniapp_ingest_disabled');
    expect(await untilApplied(probe)).toBeLessThan(BOUND_MS);
    await stays(probe);
  });

  it("the bot's project link: B stores the next events in the other project", async () => {
    const p = await provision(a.url);
    const other = await admin(a.url, 'POST', '/admin/projects', { name: 'other project' });
    expect(other.status).toBe(201);
    const projectOf = async (): Promise<string> => {
      const e = serverEvent();
      const r = await postBotApi(b.url, p.token, { events: [e] });
      expect(r.status, r.text).toBe(202);
      const [row] = await db.sql`SELECT project_id FROM events WHERE event_id = ${e.eventId}`;
      return row!.project_id as string;
    };
    expect(await projectOf()).toBe(p.projectId);
    expect((await admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { projectId: other.body.projectId })).status).toBe(
      200,
    );
    const probe = async () => (await projectOf()) === other.body.projectId;
    expect(await untilApplied(probe)).toBeLessThan(BOUND_MS);
    await stays(probe);
  });

  it('allowance changes: 0 gives 402 on B; raised back, 202', async () => {
    const p = await provision(a.url, { eventAllowance: 1_000_000 });
    expect((await postOne(b, p.token)).status).toBe(202);
    expect((await admin(a.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 0 })).status).toBe(200);
    const refused = async () => is(await postOne(b, p.token), 402, 'allowance_exhausted');
    expect(await untilApplied(refused)).toBeLessThan(BOUND_MS);
    await stays(refused);
    expect((await admin(a.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 1_000_000 })).status).toBe(
      200,
    );
    const admitted = async () => (await postOne(b, p.token)).status === 202;
    expect(await untilApplied(admitted)).toBeLessThan(BOUND_MS);
    await stays(admitted);
  });

  it('tracking plans: B rejects the next events with event_unplanned; deleted, B accepts them again', async () => {
    const p = await provision(a.url);
    expect((await postOne(b, p.token)).status).toBe(202);
    const put = await admin(a.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, {
      mode: 'block',
      unplannedEvents: 'block',
      events: {},
    });
    expect(put.status, put.text).toBe(200);
    const probe = async () => {
      const r = await postOne(b, p.token);
      return r.status === 400 && r.body.rejected === 1 && r.body.diagnostics?.[0]?.code === 'event_unplanned';
    };
    expect(await untilApplied(probe)).toBeLessThan(BOUND_MS);
    await stays(probe);
    expect((await admin(a.url, 'DELETE', `/admin/projects/${p.projectId}/tracking-plan`)).status).toBe(204);
    const accepted = async () => (await postOne(b, p.token)).status === 202;
    expect(await untilApplied(accepted)).toBeLessThan(BOUND_MS);
  });

  it('on an idle instance: the first request more than 2 × AUTH_CACHE_TTL_MS after a change sees it', async () => {
    // B served each of these (so it has them cached), then saw no request while the change was made
    // and 2 × TTL passed. The promise does not depend on traffic keeping B's caches fresh.
    const cases: {
      name: string;
      setup: () => Promise<{ change: () => Promise<Res>; applied: () => Promise<boolean> }>;
    }[] = [
      {
        name: 'token revocation',
        setup: async () => {
          const p = await provision(a.url);
          expect((await postOne(b, p.token)).status).toBe(202);
          return {
            change: () => admin(a.url, 'DELETE', `/admin/tokens/${p.tokenId}`),
            applied: async () => is(await postOne(b, p.token), 401),
          };
        },
      },
      {
        name: 'apiIngest off',
        setup: async () => {
          const p = await provision(a.url);
          expect((await postOne(b, p.token)).status).toBe(202);
          return {
            change: () => admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { apiIngest: false }),
            applied: async () => is(await postOne(b, p.token), 403),
          };
        },
      },
      {
        name: 'miniAppIngest off',
        setup: async () => {
          const p = await provision(a.url);
          expect((await postWebapp(b, p)).status).toBe(202);
          return {
            change: () => admin(a.url, 'PATCH', `/admin/bots/${p.botId}`, { miniAppIngest: false }),
            applied: async () => is(await postWebapp(b, p), 409),
          };
        },
      },
      {
        name: 'allowance 0 on an unlimited project',
        setup: async () => {
          const p = await provision(a.url);
          expect((await postOne(b, p.token)).status).toBe(202);
          return {
            change: () => admin(a.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 0 }),
            applied: async () => is(await postOne(b, p.token), 402),
          };
        },
      },
      {
        name: 'allowance 0 on a limited project',
        setup: async () => {
          const p = await provision(a.url, { eventAllowance: 1_000_000 });
          expect((await postOne(b, p.token)).status).toBe(202);
          return {
            change: () => admin(a.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 0 }),
            applied: async () => is(await postOne(b, p.token), 402),
          };
        },
      },
      {
        name: 'tracking plan',
        setup: async () => {
          const p = await provision(a.url);
          expect((await postOne(b, p.token)).status).toBe(202);
          return {
            change: () =>
              admin(a.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, {
                mode: 'block',
                unplannedEvents: 'block',
                events: {},
              }),
            applied: async () => (await postOne(b, p.token)).status === 400,
          };
        },
      },
    ];
    const results = await Promise.all(
      cases.map(async (c) => {
        const { change, applied } = await c.setup();
        const r = await change();
        expect(r.status, `${c.name}: ${r.text}`).toBeLessThan(300);
        // 2 × TTL and a margin for the background reads B may have had under way when the change was made.
        await sleep(2 * TTL_MS + 300);
        return { name: c.name, applied: await applied() };
      }),
    );
    expect(results.filter((r) => !r.applied).map((r) => r.name)).toEqual([]);
  });
});
