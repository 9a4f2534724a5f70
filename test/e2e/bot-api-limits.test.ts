import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
const TTL_MS = 300;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    RATE_LIMIT_BURST: '3',
    RATE_LIMIT_PER_MIN: '60',
    AUTH_CACHE_TTL_MS: String(TTL_MS),
  });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

describe('bot_api: rate limit', () => {
  it('allows the burst, then answers 429 at once with Retry-After, per token', async () => {
    const p = await provision(srv.url);
    // Sent together: one after another (each waiting for its commit), a slow machine could take the
    // second in which the bucket refills a token, and the fourth would be admitted.
    const sends = Array.from({ length: 4 }, () => postBotApi(srv.url, p.token, { events: [serverEvent()] }));
    // Sent as soon as the 429 is in, for the same reason: checked before the body is even read, an
    // invalid body over the limit is still a 429.
    const refused = await Promise.any(
      sends.map((s) => s.then((a) => (a.status === 429 ? a : Promise.reject(new Error(String(a.status)))))),
    ).catch(() => null);
    const invalid = refused === null ? null : await postBotApi(srv.url, p.token, 'not json');
    const answers = await Promise.all(sends);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 202, 429]);
    expect(refused!.body.error).toBe('rate_limited');
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused!.headers.get('ratelimit-limit')).toBe('3');
    expect(refused!.headers.get('ratelimit-remaining')).toBe('0');
    expect(invalid!.status).toBe(429);
    // Another token of the same bot has its own bucket.
    const other = (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`)).body.token as string;
    const r = await postBotApi(srv.url, other, { events: [serverEvent()] });
    expect(r.status).toBe(202);
    expect(r.headers.get('ratelimit-remaining')).toBe('2');
    // The bucket refills at RATE_LIMIT_PER_MIN (one per second here).
    await new Promise((res) => setTimeout(res, 1100));
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
  });
});

describe("bot_api: a token's own rate limit", () => {
  it("raises and lowers one token's bucket through PATCH /admin/tokens/:tokenId, null back to the defaults", async () => {
    const p = await provision(srv.url);
    const patch = (body: unknown) => admin(srv.url, 'PATCH', `/admin/tokens/${p.tokenId}`, body);
    const raised = await patch({ rateLimitPerMin: 600_000, rateLimitBurst: 50 });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ tokenId: p.tokenId, rateLimitPerMin: 600_000, rateLimitBurst: 50 });
    // In force at once on the instance asked: 20 at once, over the default burst of 3, all stored.
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => postBotApi(srv.url, p.token, { events: [serverEvent()] })),
    );
    expect(burst.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(burst[0]!.headers.get('ratelimit-limit')).toBe('50');
    // Listed with the token; a field left out stays.
    const listed = (await admin(srv.url, 'GET', `/admin/bots/${p.botId}/tokens`)).body as Record<string, unknown>[];
    expect(listed[0]).toMatchObject({ rateLimitPerMin: 600_000, rateLimitBurst: 50 });
    expect((await patch({ rateLimitBurst: 2 })).body).toMatchObject({ rateLimitPerMin: 600_000, rateLimitBurst: 2 });
    // Lowered below the defaults: the third of three at once is refused.
    expect((await patch({ rateLimitPerMin: 1 })).body).toMatchObject({ rateLimitPerMin: 1, rateLimitBurst: 2 });
    const low = await Promise.all(
      Array.from({ length: 3 }, () => postBotApi(srv.url, p.token, { events: [serverEvent()] })),
    );
    expect(low.map((a) => a.status).sort()).toEqual([202, 202, 429]);
    // null: the service's defaults again.
    const back = await patch({ rateLimitPerMin: null, rateLimitBurst: null });
    expect(back.body).toMatchObject({ rateLimitPerMin: null, rateLimitBurst: null });
    expect(
      (
        await postBotApi(srv.url, (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`)).body.token, {
          events: [serverEvent()],
        })
      ).headers.get('ratelimit-limit'),
    ).toBe('3');
  });

  it('refuses limits out of bounds, unknown fields and empty bodies with 400, an unknown token with 404', async () => {
    const p = await provision(srv.url);
    for (const body of [
      { rateLimitPerMin: 0 },
      { rateLimitPerMin: 60_000_001 },
      { rateLimitBurst: 10_000_001 },
      { rateLimitPerMin: 1.5 },
      { rateLimitPerMin: '100' },
      { rateLimit: 100 },
      {},
    ]) {
      const r = await admin(srv.url, 'PATCH', `/admin/tokens/${p.tokenId}`, body);
      expect([JSON.stringify(body), r.status, r.body.error]).toEqual([JSON.stringify(body), 400, 'bad_request']);
    }
    const unknown = await admin(srv.url, 'PATCH', '/admin/tokens/00000000-0000-4000-8000-000000000000', {
      rateLimitPerMin: 5,
    });
    expect(unknown.status).toBe(404);
  });

  it('is in force on another instance within 2 × AUTH_CACHE_TTL_MS', async () => {
    const second = await startServer(db.url, { AUTH_CACHE_TTL_MS: String(TTL_MS), RATE_LIMIT_BURST: '3' });
    try {
      const p = await provision(srv.url);
      const limit = async () =>
        (await postBotApi(second.url, p.token, { events: [serverEvent()] })).headers.get('ratelimit-limit');
      expect(await limit()).toBe('3');
      expect((await admin(srv.url, 'PATCH', `/admin/tokens/${p.tokenId}`, { rateLimitBurst: 500 })).status).toBe(200);
      // As for a revocation: the bound, with room for two busy cores.
      const bound = 10 * 2 * TTL_MS;
      const started = Date.now();
      await expect.poll(limit, { timeout: bound, interval: 50 }).toBe('500');
      expect(Date.now() - started).toBeLessThan(bound);
    } finally {
      await second.stop();
    }
  });
});

describe('bot_api: database trouble', () => {
  it('503 with Retry-After when an uncached plan cannot be read', async () => {
    const p = await provision(srv.url);
    await db.sql`ALTER VIEW billing_usage RENAME TO billing_usage_away`;
    try {
      const r = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
      expect(r.status).toBe(503);
      expect(r.body.error).toBe('unavailable');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } finally {
      await db.sql`ALTER VIEW billing_usage_away RENAME TO billing_usage`;
    }
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
  });

  it('503 when the commit fails, and the retried request is then stored once', async () => {
    const p = await provision(srv.url);
    const name = new URL(db.url).pathname.slice(1);
    const dropWriters = () =>
      db.sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND application_name LIKE 'tg-ingest writer%'`;
    const events = [serverEvent(), serverEvent(), serverEvent()];
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    // As after a failover to a read-only server: the writer's connections come back unable to write.
    await db.sql.unsafe(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    await dropWriters();
    try {
      const r = await postBotApi(srv.url, p.token, { events });
      expect(r.status).toBe(503);
      expect(r.body.error).toBe('unavailable');
      expect(r.headers.get('retry-after')).toBe('1');
      const [{ n }] =
        await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${events.map((e) => e.eventId)}::uuid[])`;
      expect(n).toBe(0);
    } finally {
      await db.sql.unsafe(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await dropWriters();
    }
    await new Promise((res) => setTimeout(res, 1100));
    const retry = await postBotApi(srv.url, p.token, { events });
    expect(retry.status).toBe(202);
    expect(retry.body.accepted).toBe(3);
    const again = await postBotApi(srv.url, p.token, { events });
    expect(again.body.accepted).toBe(3);
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${events.map((e) => e.eventId)}::uuid[])`;
    expect(n).toBe(3);
  });
});

describe('bot_api: token revocation across instances', () => {
  it('a token revoked through one instance stops working on another within seconds', async () => {
    const second = await startServer(db.url, { AUTH_CACHE_TTL_MS: String(TTL_MS), RATE_LIMIT_BURST: '1000' });
    try {
      const p = await provision(srv.url);
      expect((await postBotApi(second.url, p.token, { events: [serverEvent()] })).status).toBe(202);
      expect((await admin(srv.url, 'DELETE', `/admin/tokens/${p.tokenId}`)).status).toBe(204);
      // The promise is 2 × AUTH_CACHE_TTL_MS (600 ms here); 10× that still tells "within seconds" from
      // "never" (a cache entry kept while in use), without failing on two busy cores.
      const bound = 10 * 2 * TTL_MS;
      const started = Date.now();
      let status = 202;
      while (status !== 401 && Date.now() - started < 2 * bound) {
        status = (await postBotApi(second.url, p.token, { events: [serverEvent()] })).status;
        if (status === 202) await new Promise((res) => setTimeout(res, 50));
        else expect(status).toBe(401);
      }
      expect(status).toBe(401);
      expect(Date.now() - started).toBeLessThan(bound);
    } finally {
      await second.stop();
    }
  });
});
