// A request whose rows could break a COPY must not sink the other requests of its group commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  // A wait lets concurrent requests share one group commit.
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '100000', BATCH_MAX_WAIT_MS: '150', DB_WRITER_CONNECTIONS: '1' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const row = async (eventId: string) => (await db.sql`SELECT * FROM events WHERE event_id = ${eventId}`)[0];

describe('values that could break COPY', () => {
  // Each case: the event as sent (raw JSON, to send what JSON.stringify would not), and what must be stored.
  const cases: {
    name: string;
    json: (id: string) => string;
    check: (r: Record<string, any> | undefined, diagnostics: { code: string }[]) => void;
  }[] = [
    {
      name: 'NUL in name, text and values',
      json: (id) =>
        `{"eventId":"${id}","eventName":"a\\u0000b","eventDate":"2026-01-01T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1","text":"x\\u0000y","propsString":{"k":"\\u0000v"}}`,
      check: (r) => expect([r?.event_name, r?.text, r?.props_string]).toEqual(['ab', 'xy', { k: 'v' }]),
    },
    {
      name: 'unpaired surrogates',
      json: (id) =>
        `{"eventId":"${id}","eventName":"\\ud800n","eventDate":"2026-01-01T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1","text":"t\\udc00","propsString":{"k":"\\ud83d"}}`,
      check: (r) => expect([r?.event_name, r?.text, r?.props_string]).toEqual(['\uFFFDn', 't\uFFFD', { k: '\uFFFD' }]),
    },
    {
      name: 'backslashes, the COPY null marker and end-of-data line',
      json: (id) =>
        JSON.stringify({
          eventId: id,
          eventName: '\\N',
          eventDate: '2026-01-01T00:00:00Z',
          eventType: 'message',
          eventOrigin: 'custom',
          platformUserId: '1',
          text: '\\.\nC:\\dir\\',
          propsString: { k: '\\N', q: '"\\"' },
        }),
      check: (r) =>
        expect([r?.event_name, r?.text, r?.props_string]).toEqual(['\\N', '\\.\nC:\\dir\\', { k: '\\N', q: '"\\"' }]),
    },
    {
      name: 'tabs, newlines and carriage returns in values and keys',
      json: (id) =>
        JSON.stringify({
          eventId: id,
          eventName: 'a\tb\nc\rd',
          eventDate: '2026-01-01T00:00:00Z',
          eventType: 'message',
          eventOrigin: 'custom',
          platformUserId: '1',
          text: '\t\n\r',
          propsString: { 'bad\tkey': 'x', 'bad\nkey': 'y', ok: '\t\n' },
        }),
      check: (r) => expect([r?.event_name, r?.text, r?.props_string]).toEqual(['a\tb\nc\rd', '\t\n\r', { ok: '\t\n' }]),
    },
    {
      name: 'huge numbers and negative zero',
      json: (id) =>
        `{"eventId":"${id}","eventName":"n","eventDate":"2026-01-01T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1","propsLong":{"big":9007199254740993,"neg0":-0,"max":9007199254740991},"propsFloat":{"huge":1e308,"tiny":5e-324,"over":1e400,"neg0":-0.0}}`,
      check: (r) => {
        expect(r?.props_long).toEqual({ neg0: 0, max: 9007199254740991 });
        expect(r?.props_float).toEqual({ huge: 1e308, tiny: 5e-324, neg0: 0 });
      },
    },
    {
      name: 'timestamps outside what PostgreSQL stores are rejected, the rest of the batch is not',
      json: (id) =>
        `{"eventId":"${id}","eventName":"n","eventDate":"+275760-09-13T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1"}`,
      check: (r, d) => {
        expect(r).toBeUndefined();
        expect(d.map((x) => x.code)).toContain('event_date_invalid');
      },
    },
    {
      name: 'the earliest and latest dates accepted',
      json: (id) =>
        `{"eventId":"${id}","eventName":"n","eventDate":"0001-01-01T00:00:00+14:00","eventType":"message","eventOrigin":"custom","platformUserId":"9223372036854775807","propsString":{"d":"9999-12-31T23:59:59.999999Z"}}`,
      check: (r) => {
        expect(r?.platform_user_id).toBe('9223372036854775807');
        expect(r?.event_date).toBeInstanceOf(Date);
      },
    },
    {
      name: '__proto__ and constructor keys',
      json: (id) =>
        `{"eventId":"${id}","eventName":"n","eventDate":"2026-01-01T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1","__proto__":{"platformUserId":"666"},"propsString":{"__proto__":"p","constructor":"c","toString":"t"}}`,
      check: (r) => {
        expect(r?.platform_user_id).toBe('1');
        expect(r?.props_string).toEqual(JSON.parse('{"__proto__":"p","constructor":"c","toString":"t"}'));
        expect(({} as Record<string, unknown>).platformUserId).toBeUndefined();
      },
    },
  ];

  it('stores every request of a shared group commit, each value repaired or its event rejected', async () => {
    const normal = Array.from({ length: 4 }, () => serverEvent());
    const ids = cases.map(() => serverEvent().eventId as string);
    const results = await Promise.all([
      ...cases.map((c, i) =>
        call(`${srv.url}/tg`, {
          method: 'POST',
          headers: { 'x-api-key': p.token },
          body: `{"events":[${c.json(ids[i]!)},${JSON.stringify(serverEvent())}]}`,
        }),
      ),
      ...normal.map((e) => postBotApi(srv.url, p.token, { events: [e] })),
    ]);
    for (const [i, r] of results.entries()) expect(r.status, `${cases[i]?.name ?? 'normal'}: ${r.text}`).toBe(202);
    for (const [i, c] of cases.entries()) c.check(await row(ids[i]!), results[i]!.body.diagnostics);
    for (const e of normal) expect(await row(e.eventId)).toBeDefined();
  });
});

describe('rows PostgreSQL refuses', () => {
  it("refused for every request of a batch: the database's fault, answered 503 like an outage, never 400", async () => {
    // A constraint nothing can meet (as a broken migration or a missing partition would be).
    await db.sql`ALTER TABLE events ADD CONSTRAINT test_nothing CHECK (event_name = 'never') NOT VALID`;
    try {
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => postBotApi(srv.url, p.token, { events: [serverEvent()] })),
      );
      const statuses = answers.map((r) => r.status);
      // Alone in a batch, a request refused for its values is its own 400; with others, 503.
      expect(statuses.filter((s) => s === 503).length, JSON.stringify(answers.map((r) => r.body))).toBeGreaterThan(0);
      for (const r of answers) expect([400, 503]).toContain(r.status);
      for (const r of answers.filter((a) => a.status === 503)) expect(r.body.error).toBe('unavailable');
    } finally {
      await db.sql`ALTER TABLE events DROP CONSTRAINT test_nothing`;
    }
    await new Promise((r) => setTimeout(r, 600));
  });

  it('fail only their own request; the others in the same group commit are stored', async () => {
    // A constraint the service knows nothing about makes one request's rows unstorable.
    await db.sql`ALTER TABLE events ADD CONSTRAINT test_no_poison CHECK (event_name <> 'poison-pill')`;
    try {
      const good = Array.from({ length: 5 }, () => serverEvent());
      const poison = serverEvent({ eventName: 'poison-pill' });
      const [bad, ...ok] = await Promise.all([
        postBotApi(srv.url, p.token, { events: [poison, serverEvent()] }),
        ...good.map((e) => postBotApi(srv.url, p.token, { events: [e] })),
      ]);
      // Refused alone too: the request's own 400, with the database's reason; never a 5xx.
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: 'storage_refused', details: { sqlstate: '23514' } });
      for (const r of ok) expect(r.status).toBe(202);
      for (const e of good) expect(await row(e.eventId)).toBeDefined();
      expect(await row(poison.eventId)).toBeUndefined();
      const metrics = (await admin(srv.url, 'GET', '/metrics')).text;
      expect(metrics).toMatch(/tg_ingest_db_errors_total\{kind="refused"\} [1-9]/);
      expect((await call(`${srv.url}/healthz`)).status).toBe(200);
    } finally {
      await db.sql`ALTER TABLE events DROP CONSTRAINT test_no_poison`;
    }
  });
});
