// The embeddable client against the real service over HTTP: what a caller sees in PostgreSQL and
// in the client's callbacks and reports.
import { freePort } from '../../src/db/embedded.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BotApiEventInput,
  createClient,
  type Diagnostic,
  IngestError,
  type Stamped,
} from '../../client/src/index.js';
import { provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex, RATE_LIMIT_BURST: '100000' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const ev = (over: Partial<BotApiEventInput> = {}): BotApiEventInput => ({
  eventName: 'message_received',
  eventType: 'message',
  eventOrigin: 'custom',
  platformUserId: '1001',
  ...over,
});

async function stored(ids: string[]): Promise<{ rows: number; distinct: number }> {
  const [r] =
    await db.sql`SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct FROM events WHERE event_id = ANY(${ids}::uuid[])`;
  return { rows: r!.rows, distinct: r!.distinct };
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000, everyMs = 25): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// The restarted server needs the killed one to have listened on a fixed port (freePort): only
// then is SO_REUSEADDR set, which lets a new server bind over TIME_WAIT sockets.

/** Passes every request through to the real fetch, noting what was sent. */
function observedFetch(log: { encoding: string | null; bytes: number }[]): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    log.push({ encoding: headers.get('content-encoding'), bytes: (init!.body as Uint8Array).byteLength });
    return fetch(input, init);
  };
}

describe('batching', () => {
  it('sends a batch as soon as it is full and keeps the remainder for the time window', async () => {
    const client = createClient({ baseUrl: srv.url, apiKey: p.token, maxBatchEvents: 10, flushIntervalMs: 60_000 });
    const ids = Array.from({ length: 25 }, () => client.track(ev()).eventId);
    await until(async () => (await stored(ids)).rows === 20);
    await new Promise((r) => setTimeout(r, 300));
    expect((await stored(ids)).rows).toBe(20);
    expect(client.pending).toBe(5);
    const report = await client.close();
    expect(report).toMatchObject({ accepted: 25, rejected: 0, failed: 0, requests: 3, retries: 0 });
    expect(await stored(ids)).toEqual({ rows: 25, distinct: 25 });
  });

  it('sends a partial batch once flushIntervalMs has passed', async () => {
    const client = createClient({ baseUrl: srv.url, apiKey: p.token, flushIntervalMs: 400 });
    const t0 = Date.now();
    const ids = [client.track(ev()).eventId, client.track(ev()).eventId, client.track(ev()).eventId];
    await new Promise((r) => setTimeout(r, 200));
    expect((await stored(ids)).rows).toBe(0);
    await until(async () => (await stored(ids)).rows === 3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
    expect(await client.close()).toMatchObject({ accepted: 3, requests: 1 });
  });

  it("fills eventId and eventDate, keeps the caller's own", async () => {
    const client = createClient({ baseUrl: srv.url, apiKey: p.token });
    const own = { eventId: crypto.randomUUID(), eventDate: '2026-01-31T12:00:00Z' };
    const a = client.track(ev(own));
    const b = client.track(ev({ eventDate: new Date('2026-02-01T00:00:00Z') }));
    expect(a).toMatchObject(own);
    expect(b.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.eventDate).toBe('2026-02-01T00:00:00.000Z');
    await client.close();
    const rows =
      await db.sql`SELECT event_id, event_date FROM events WHERE event_id IN (${a.eventId}, ${b.eventId}) ORDER BY event_date`;
    expect(rows.map((r) => [r.event_id, (r.event_date as Date).toISOString()])).toEqual([
      [a.eventId, '2026-01-31T12:00:00.000Z'],
      [b.eventId, '2026-02-01T00:00:00.000Z'],
    ]);
  });

  it('gzips a large batch and the server stores it', async () => {
    const sent: { encoding: string | null; bytes: number }[] = [];
    const client = createClient({ baseUrl: srv.url, apiKey: p.token, fetch: observedFetch(sent) });
    const text = 'lorem ipsum dolor sit amet '.repeat(100);
    const ids = Array.from({ length: 500 }, (_, i) => client.track(ev({ text, propsLong: { i } })).eventId);
    await client.flush();
    const small = client.track(ev()).eventId;
    expect(await client.close()).toMatchObject({ accepted: 1, failed: 0 });
    expect(sent).toHaveLength(2);
    expect(sent[0]!.encoding).toBe('gzip');
    expect(sent[0]!.bytes).toBeLessThan((500 * text.length) / 10);
    expect(sent[1]!.encoding).toBeNull();
    expect(await stored([...ids, small])).toEqual({ rows: 501, distinct: 501 });
    const [row] = await db.sql`SELECT text, props_long FROM events WHERE event_id = ${ids[499]!}`;
    expect(row).toEqual({ text, props_long: { i: 499 } });
  });
});

describe('what the server refuses', () => {
  it('hands rejected events to onRejected with their diagnostics, warnings to onWarnings', async () => {
    const rejected: { events: Stamped<BotApiEventInput>[]; diagnostics: Diagnostic[] }[] = [];
    const warned: { events: Stamped<BotApiEventInput>[]; diagnostics: Diagnostic[] }[] = [];
    const client = createClient({
      baseUrl: srv.url,
      apiKey: p.token,
      onRejected: (events, diagnostics) => rejected.push({ events, diagnostics }),
      onWarnings: (events, diagnostics) => warned.push({ events, diagnostics }),
    });
    const good = client.track(ev());
    const badUser = client.track(ev({ platformUserId: 'alice' }));
    const noName = client.track(ev({ eventName: '' }));
    const oddType = client.track(ev({ eventType: 'weird' }));
    const report = await client.close();
    expect(report).toMatchObject({ accepted: 2, rejected: 2, failed: 0, warnings: 1, rejectedEvents: [] });
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.events.map((e) => e.eventId).sort()).toEqual([badUser.eventId, noName.eventId].sort());
    expect(rejected[0]!.diagnostics.map((d) => [d.event_id, d.code, d.severity]).sort()).toEqual(
      [
        [badUser.eventId, 'platform_user_id_invalid', 'error'],
        [noName.eventId, 'event_missing_identity', 'error'],
      ].sort(),
    );
    expect(warned).toEqual([
      {
        events: [oddType],
        diagnostics: [expect.objectContaining({ event_id: oddType.eventId, code: 'event_type_unknown' })],
      },
    ]);
    expect(await stored([good.eventId, badUser.eventId, noName.eventId, oddType.eventId])).toEqual({
      rows: 2,
      distinct: 2,
    });
  });

  it('names every rejection even when the server cut its diagnostics at 100', async () => {
    const rejected: Stamped<BotApiEventInput>[] = [];
    const codes: string[] = [];
    const client = createClient({
      baseUrl: srv.url,
      apiKey: p.token,
      onRejected: (events, diagnostics) => {
        rejected.push(...events);
        codes.push(...diagnostics.map((d) => d.code));
      },
    });
    const warned = Array.from({ length: 120 }, () => client.track(ev({ eventType: 'weird' })).eventId);
    const bad = Array.from({ length: 3 }, () => client.track(ev({ platformUserId: 'x' })).eventId);
    const report = await client.close();
    expect(report).toMatchObject({ accepted: 120, rejected: 3, failed: 0 });
    expect(rejected.map((e) => e.eventId).sort()).toEqual([...bad].sort());
    expect(codes).toEqual(['platform_user_id_invalid', 'platform_user_id_invalid', 'platform_user_id_invalid']);
    expect(await stored([...warned, ...bad])).toEqual({ rows: 120, distinct: 120 });
  });

  it('keeps rejections in the flush() report when no callback is set, also for an all-rejected 400', async () => {
    const client = createClient({ baseUrl: srv.url, apiKey: p.token });
    const bad = client.track(ev({ eventDate: 'yesterday' }));
    const report = await client.close();
    expect(report).toMatchObject({ accepted: 0, rejected: 1, failed: 0 });
    expect(report.rejectedEvents).toEqual([
      { event: bad, diagnostics: [expect.objectContaining({ code: 'event_date_invalid', severity: 'error' })] },
    ]);
  });

  it('reports a 401 to onFailed after one attempt, and nothing is stored', async () => {
    const failed: { events: Stamped<BotApiEventInput>[]; error: Error }[] = [];
    const client = createClient({
      baseUrl: srv.url,
      apiKey: 'not-a-token',
      onFailed: (events, error) => failed.push({ events, error }),
    });
    const ids = [client.track(ev()).eventId, client.track(ev()).eventId];
    const report = await client.close();
    expect(report).toMatchObject({ accepted: 0, failed: 2, requests: 1, retries: 0, failedEvents: [] });
    expect(failed).toHaveLength(1);
    expect(failed[0]!.events.map((e) => e.eventId)).toEqual(ids);
    expect(failed[0]!.error).toBeInstanceOf(IngestError);
    expect(failed[0]!.error).toMatchObject({
      status: 401,
      code: 'api_key_invalid',
      attempts: 1,
      retriesExhausted: false,
    });
    expect((await stored(ids)).rows).toBe(0);
  });

  it('bounds the queue: beyond maxQueueEvents track() reports to onFailed, or throws without it', async () => {
    const failed: string[] = [];
    const client = createClient({
      baseUrl: srv.url,
      apiKey: p.token,
      maxQueueEvents: 3,
      flushIntervalMs: 60_000,
      onFailed: (_, e) => failed.push((e as IngestError).code),
    });
    const ids = Array.from({ length: 5 }, () => client.track(ev()).eventId);
    expect(failed).toEqual(['queue_full', 'queue_full']);
    expect(await client.close()).toMatchObject({ accepted: 3, failed: 2 });
    expect(await stored(ids)).toEqual({ rows: 3, distinct: 3 });

    const strict = createClient({ baseUrl: srv.url, apiKey: p.token, maxQueueEvents: 1, flushIntervalMs: 60_000 });
    strict.track(ev());
    expect(() => strict.track(ev())).toThrow(expect.objectContaining({ code: 'queue_full' }));
    await strict.close();
    expect(() => strict.track(ev())).toThrow(expect.objectContaining({ code: 'client_closed' }));
  });

  it('sends profiles and the bot snapshot with a batch (bot_api endpoint)', async () => {
    const client = createClient({ baseUrl: srv.url, apiKey: p.token });
    client.setProfile({ messengerUserId: 5005, username: 'bob', firstName: 'Bob' });
    client.setBot({ name: 'Shop bot' });
    client.track(ev({ platformUserId: '5005' }));
    expect(await client.close()).toMatchObject({ accepted: 1, warnings: 0 });
    const users =
      await db.sql`SELECT username, first_name FROM users WHERE project_id = ${p.projectId} AND messenger_user_id = 5005`;
    expect(users).toEqual([{ username: 'bob', first_name: 'Bob' }]);
    const [bot] = await db.sql`SELECT name FROM bots WHERE bot_id = ${p.botId}`;
    expect(bot).toEqual({ name: 'Shop bot' });
  });
});

describe('webapp endpoint', () => {
  it('stores events for the initData user on the webapp channel', async () => {
    let calls = 0;
    const client = createClient({
      baseUrl: srv.url,
      botId: p.botId,
      initData: () => {
        calls++;
        return makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: 777001, first_name: 'Ada' } });
      },
    });
    const a = client.track({ eventName: 'button_click', eventType: 'interaction', propsString: { page: 'home' } });
    const b = client.track({ eventName: 'open', eventType: 'platform' });
    expect(await client.close()).toMatchObject({ accepted: 2, rejected: 0, failed: 0 });
    expect(calls).toBe(1);
    const rows =
      await db.sql`SELECT event_id, event_name, platform_user_id, channel, origin FROM events WHERE event_id IN (${a.eventId}, ${b.eventId}) ORDER BY event_name`;
    expect(rows).toEqual([
      {
        event_id: a.eventId,
        event_name: 'button_click',
        platform_user_id: '777001',
        channel: 'webapp',
        origin: 'custom',
      },
      { event_id: b.eventId, event_name: 'open', platform_user_id: '777001', channel: 'webapp', origin: 'custom' },
    ]);
  });

  it('reports refused initData as failed, not retried', async () => {
    const client = createClient({ baseUrl: srv.url, botId: p.botId, initData: 'user=%7B%7D&auth_date=1' });
    client.track({ eventName: 'open', eventType: 'platform' });
    const report = await client.close();
    expect(report).toMatchObject({ failed: 1, requests: 1 });
    expect(report.failedEvents[0]!.error).toMatchObject({ status: 401 });
  });
});

describe('retries', () => {
  it('waits out a 429 for its Retry-After, then delivers', async () => {
    const limited = await startServer(db.url, { RATE_LIMIT_BURST: '1', RATE_LIMIT_PER_MIN: '60' });
    try {
      const own = await provision(limited.url);
      // A tiny backoff base: only honouring Retry-After (1 s) gets past the bucket with one retry.
      const client = createClient({
        baseUrl: limited.url,
        apiKey: own.token,
        maxBatchEvents: 10,
        retryBaseMs: 1,
        retryMaxMs: 2,
      });
      const t0 = Date.now();
      const ids = Array.from({ length: 20 }, () => client.track(ev()).eventId);
      const report = await client.close();
      expect(report).toMatchObject({ accepted: 20, failed: 0, requests: 3, retries: 1 });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      expect(await stored(ids)).toEqual({ rows: 20, distinct: 20 });
    } finally {
      await limited.stop();
    }
  });

  it('delivers every event exactly once through a server killed and restarted on the same port', async () => {
    const first = await startServer(db.url, { PORT: String(await freePort()) });
    let second: RunningServer | undefined;
    try {
      const own = await provision(first.url);
      const failed: Error[] = [];
      const client = createClient({
        baseUrl: first.url,
        apiKey: own.token,
        maxBatchEvents: 100,
        flushIntervalMs: 50,
        retryBaseMs: 50,
        retryMaxMs: 400,
        maxRetries: 100,
        requestTimeoutMs: 5000,
        onFailed: (_, e) => failed.push(e),
      });
      // Twenty batches, two in flight at a time; the kill lands once the first are committed, so
      // some are committed without their 202 having been read, others are in flight or queued.
      const ids = Array.from({ length: 2000 }, (_, i) => client.track(ev({ propsLong: { i } })).eventId);
      await until(async () => (await stored(ids)).rows > 0, 10_000, 1);
      await first.kill();
      ids.push(...Array.from({ length: 150 }, (_, i) => client.track(ev({ propsLong: { i: 2000 + i } })).eventId));
      await new Promise((r) => setTimeout(r, 300));
      expect(client.pending).toBeGreaterThan(150);
      second = await startServer(db.url, { PORT: String(first.port) });
      const report = await client.close();
      expect(failed).toEqual([]);
      expect(report).toMatchObject({ accepted: 2150, rejected: 0, failed: 0 });
      expect(report.retries).toBeGreaterThan(0);
      expect(await stored(ids)).toEqual({ rows: 2150, distinct: 2150 });
    } finally {
      await first.kill();
      await second?.stop();
    }
  });
});
