// Hostile input, round two: what a tenant sends can fail only its own request, never another
// tenant's commit, the process, or a later reader of what was stored.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TG_REGISTRY } from '../../src/pipeline/registry.js';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { NO_SHEDDING, type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let a: Provisioned;
let b: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    RATE_LIMIT_BURST: '1000000',
    INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
    WORKERS: '2',
    ...NO_SHEDDING,
  });
  [a, b] = [await provision(srv.url), await provision(srv.url)];
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const stored = async (eventId: string) => (await db.sql`SELECT tg, billed FROM events WHERE event_id = ${eventId}`)[0];
const alive = async () => {
  expect(srv.proc.exitCode).toBeNull();
  expect((await call(`${srv.url}/healthz`)).status).toBe(200);
};

describe('a value PostgreSQL cannot index', () => {
  it('a 4 KiB payment charge id is stored (its billing key hashed), and another tenant in the same moment gets 202', async () => {
    const charge = Array.from({ length: 4096 }, () => String.fromCharCode(33 + Math.floor(Math.random() * 90))).join(
      '',
    );
    const payment = serverEvent({
      eventName: 'successful_payment',
      eventType: 'payment',
      eventOrigin: 'platform',
      propsString: { 'tg.telegram_payment_charge_id': charge, 'tg.currency': 'XTR' },
      propsLong: { 'tg.total_amount': 5 },
    });
    const others = Array.from({ length: 20 }, () => serverEvent());
    const [mine, ...theirs] = await Promise.all([
      postBotApi(srv.url, a.token, { events: [payment] }),
      ...others.map((e) => postBotApi(srv.url, b.token, { events: [e] })),
    ]);
    expect(mine.status, mine.text).toBe(202);
    for (const r of theirs) expect(r.status).toBe(202);
    expect((await stored(payment.eventId))!.tg.telegram_payment_charge_id).toBe(charge);
    const [key] = await db.sql`SELECT action_key FROM billing_actions WHERE project_id = ${a.projectId}`;
    expect(key!.action_key).toMatch(/^payment:sha256:[A-Za-z0-9_-]{43}$/);
    // The same charge again, from another connection of the project: billed once, as for short keys.
    const t2 = await admin(srv.url, 'POST', `/admin/bots/${a.botId}/tokens`);
    const again = await postBotApi(srv.url, t2.body.token, { events: [{ ...payment, eventId: randomUUID() }] });
    expect(again.body.stored_not_billed).toBe(1);
  });

  // Every canonical field and every stored string at its longest, in odd Unicode, beside another
  // tenant's batch in the same group commit.
  const odd = fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1 }),
    fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udfff',
      '\u202e',
      '\ufeff',
      '\\',
      '"',
      '\t\n\r',
      '😀',
      'e\u0301',
      '{',
      "'",
      'NULL',
      '\\N',
      ',',
    ),
  );
  const longest = (max: number) =>
    fc.array(odd, { minLength: 1, maxLength: 40 }).map((parts) => {
      let s = '';
      while (s.length < max + 10) s += parts.join('');
      return s;
    });
  const canonical = Object.entries(TG_REGISTRY);

  it('every tg.* field and stored string at its maximum length, in odd Unicode, commits beside another tenant', async () => {
    await fc.assert(
      fc.asyncProperty(longest(4096), longest(256), fc.boolean(), async (text, profile, asPayment) => {
        const propsString: Record<string, string> = {};
        const propsLong: Record<string, number> = {};
        const propsFloat: Record<string, number> = {};
        const propsBool: Record<string, boolean> = {};
        for (const [field, type] of canonical) {
          if (type === 'string') propsString[`tg.${field}`] = text;
          if (type === 'long') propsLong[`tg.${field}`] = Number.MAX_SAFE_INTEGER;
          if (type === 'float') propsFloat[`tg.${field}`] = -Number.MAX_VALUE;
          if (type === 'bool') propsBool[`tg.${field}`] = true;
        }
        for (let i = 0; i < 20; i++) propsString[`k${'x'.repeat(120)}${i}`] = text;
        const ev = serverEvent({
          eventName: asPayment ? 'successful_payment' : text,
          eventType: 'payment',
          eventOrigin: 'platform',
          text,
          platformUserId: '9223372036854775807',
          propsString,
          propsLong,
          propsFloat,
          propsBool,
        });
        const body = {
          events: [ev],
          users: [
            {
              messengerUserId: '9223372036854775807',
              username: profile,
              firstName: profile,
              lastName: profile,
              languageCode: profile,
              isPremium: true,
            },
          ],
          bot: { name: profile, description: text },
        };
        const neighbour = serverEvent();
        const [mine, theirs] = await Promise.all([
          postBotApi(srv.url, a.token, body),
          postBotApi(srv.url, b.token, { events: [neighbour] }),
        ]);
        expect(theirs.status).toBe(202);
        expect(mine.status, mine.text).toBe(202);
        expect(mine.body.accepted).toBe(1);
        const row = await stored(ev.eventId);
        expect(row).toBeDefined();
        expect(await stored(neighbour.eventId)).toBeDefined();
      }),
      { numRuns: 12 },
    );
    await alive();
  });
});

describe('what is stored cannot hurt a later reader', () => {
  it('events kept deeper than MAX_JSON_DEPTH (before the bound) are listed as text, summarised and dry-run replayed, and the process lives', async () => {
    // What a quarantine held before bodies were bounded: an event nested 16,000 deep.
    const deep = `{"eventId":"${randomUUID()}","eventName":"x","eventDate":"bad","extra":${'['.repeat(16_000)}${']'.repeat(16_000)}}`;
    await db.sql`INSERT INTO quarantine (project_id, bot_id, channel, connection_id, user_id, received_at, event_id, codes, diagnostics, event, truncated)
      VALUES (${a.projectId}, ${a.botId}, 'bot_api', ${`token:${a.tokenId}`}, NULL, now(), NULL, ARRAY['event_date_invalid'], '[]'::jsonb, ${deep}, false)`;
    // Sent today, the same event is refused whole and nothing is kept.
    const sent = await postBotApi(srv.url, a.token, `{"events":[${deep}]}`);
    expect([sent.status, sent.body.error]).toEqual([400, 'invalid_json']);
    const list = await admin(srv.url, 'GET', `/admin/projects/${a.projectId}/quarantine`);
    expect(list.status).toBe(200);
    expect(
      list.body.items.find((i: { event: unknown }) => typeof i.event === 'string' && i.event.startsWith('{"eventId"')),
    ).toBeDefined();
    expect((await admin(srv.url, 'GET', `/admin/projects/${a.projectId}/quarantine/summary`)).body).toContainEqual({
      code: 'event_date_invalid',
      count: 1,
    });
    const dry = await admin(srv.url, 'POST', `/admin/projects/${a.projectId}/quarantine/replay`, { dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ replayed: 1, accepted: 0, stillRejected: 1 });
    const real = await admin(srv.url, 'POST', `/admin/projects/${a.projectId}/quarantine/replay`, {});
    expect(real.body).toMatchObject({ replayed: 1, stillRejected: 1 });
    expect((await admin(srv.url, 'GET', `/admin/projects/${a.projectId}/quarantine`)).status).toBe(200);
    await alive();
    await admin(srv.url, 'DELETE', `/admin/projects/${a.projectId}/quarantine`);
  });
});

describe('one task, one fate', () => {
  it("gzip batches nested 300,000 deep get 400 each, and another tenant's gzip batches beside them all 202", async () => {
    const deepBody = gzipSync(
      `{"events":[{"eventId":"${randomUUID()}","eventName":"x","eventDate":"2026-01-01T00:00:00Z","eventType":"message","eventOrigin":"custom","platformUserId":"1","extra":${'['.repeat(300_000)}${']'.repeat(300_000)}}]}`,
    );
    const valid = Array.from({ length: 100 }, () => serverEvent());
    const gz = { 'content-encoding': 'gzip', 'content-type': 'application/json' };
    const [deep, ok] = await Promise.all([
      Promise.all(
        Array.from({ length: 10 }, () =>
          call(`${srv.url}/tg`, { method: 'POST', headers: { ...gz, 'x-api-key': a.token }, body: deepBody }),
        ),
      ),
      Promise.all(
        valid.map((e) =>
          call(`${srv.url}/tg`, {
            method: 'POST',
            headers: { ...gz, 'x-api-key': b.token },
            body: gzipSync(JSON.stringify({ events: [e] })),
          }),
        ),
      ),
    ]);
    for (const r of deep) expect([r.status, r.body.error]).toEqual([400, 'invalid_json']);
    expect(ok.map((r) => r.status).filter((s) => s !== 202)).toEqual([]);
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${valid.map((e) => e.eventId)}::uuid[])`;
    expect(n).toBe(100);
  });
});

describe('every size a client chooses is bounded', () => {
  it('more users[] profiles than MAX_PROFILES_PER_REQUEST (1000) is 400 too_many_profiles, and nothing is stored', async () => {
    const users = Array.from({ length: 400_000 }, (_, i) => ({ messengerUserId: 10_000_000 + i, username: `u${i}` }));
    const ev = serverEvent();
    const r = await postBotApi(srv.url, a.token, { events: [ev], users });
    expect([r.status, r.body.error, r.body.details]).toEqual([400, 'too_many_profiles', { count: 400_000, max: 1000 }]);
    expect(await stored(ev.eventId)).toBeUndefined();
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM users WHERE project_id = ${a.projectId} AND messenger_user_id BETWEEN 10000000 AND 10400000`;
    expect(n).toBe(0);
    // 1000 are fine.
    expect((await postBotApi(srv.url, a.token, { events: [serverEvent()], users: users.slice(0, 1000) })).status).toBe(
      202,
    );
  });
});

describe('admin-supplied schemas run in bounded time', () => {
  const plan = (events: Record<string, unknown>) => ({ mode: 'block', unplannedEvents: 'allow', events });

  it('refuses at PUT a schema that refers to itself on the same value, and one with a pattern RE2 cannot take', async () => {
    for (const schema of [
      { $ref: '#' },
      { anyOf: [{ $ref: '#/$defs/a' }], $defs: { a: { allOf: [{ $ref: '#' }] } } },
      { not: { $ref: '#' } },
    ]) {
      const r = await admin(srv.url, 'PUT', `/admin/projects/${b.projectId}/tracking-plan`, plan({ looped: schema }));
      expect(r.status, JSON.stringify(schema)).toBe(400);
      expect(r.body.details.eventName).toBe('looped');
      expect(r.body.message).toContain('never end');
    }
    const ahead = await admin(
      srv.url,
      'PUT',
      `/admin/projects/${b.projectId}/tracking-plan`,
      plan({ named: { properties: { propsString: { properties: { v: { pattern: '^(?=a)a$' } } } } } }),
    );
    expect(ahead.status).toBe(400);
    expect(ahead.body.details.eventName).toBe('named');
    // Recursion that descends into the event is fine.
    const tree = await admin(
      srv.url,
      'PUT',
      `/admin/projects/${b.projectId}/tracking-plan`,
      plan({ tree: { type: 'object', additionalProperties: { $ref: '#' } } }),
    );
    expect(tree.status, tree.text).toBe(200);
    const ev = serverEvent({ eventName: 'tree', propsString: { a: 'b' } });
    expect((await postBotApi(srv.url, b.token, { events: [ev] })).status).toBe(400);
    await admin(srv.url, 'DELETE', `/admin/projects/${b.projectId}/tracking-plan`);
  });

  it('a catastrophic pattern runs on the linear-time engine: the event is answered, checked as the pattern says', async () => {
    const put = await admin(
      srv.url,
      'PUT',
      `/admin/projects/${b.projectId}/tracking-plan`,
      plan({
        word: { properties: { propsString: { properties: { v: { type: 'string', pattern: '^(\\w+\\s?)*$' } } } } },
      }),
    );
    expect(put.status, put.text).toBe(200);
    const evil = serverEvent({ eventName: 'word', propsString: { v: `${'a'.repeat(40)}!` } });
    const good = serverEvent({ eventName: 'word', propsString: { v: 'just some words' } });
    const r = await postBotApi(srv.url, b.token, { events: [evil, good] });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 1, rejected: 1 });
    expect(r.body.diagnostics).toEqual([
      expect.objectContaining({ event_id: evil.eventId, code: 'schema_violation', path: 'props_string.v' }),
    ]);
    await admin(srv.url, 'DELETE', `/admin/projects/${b.projectId}/tracking-plan`);
  });

  it('a plan stored before these checks that no longer compiles rejects its events with a reason, never a 5xx', async () => {
    await db.sql`INSERT INTO tracking_plans (project_id, version, plan) VALUES (${b.projectId}, 1000, ${db.sql.json({ mode: 'block', unplannedEvents: 'allow', events: { looped: { $ref: '#' } } })})
      ON CONFLICT (project_id) DO UPDATE SET version = 1000, plan = excluded.plan`;
    const ev = serverEvent({ eventName: 'looped' });
    // Within 2 × AUTH_CACHE_TTL_MS the stored plan is in force.
    let r = await postBotApi(srv.url, b.token, { events: [ev] });
    for (let i = 0; i < 50 && r.status === 202; i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await postBotApi(srv.url, b.token, { events: [{ ...ev, eventId: randomUUID() }] });
    }
    expect(r.status).toBe(400);
    expect(r.body.diagnostics[0]).toMatchObject({ code: 'schema_violation', path: 'event' });
    expect(r.body.diagnostics[0].message).toContain('cannot be used');
    await admin(srv.url, 'DELETE', `/admin/projects/${b.projectId}/tracking-plan`);
    await alive();
  });
});

describe('probes and metrics', () => {
  it('/metrics on the main listener needs the admin token; /readyz answers without a query of its own', async () => {
    expect((await call(`${srv.url}/metrics`)).status).toBe(401);
    expect(
      (await call(`${srv.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status,
    ).toBe(401);
    const m = await admin(srv.url, 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.text).toContain('tg_ingest_http_requests_total');
    // A burst of probes: the database sees the readiness query at most about once a second.
    await db.sql`SELECT pg_stat_reset()`;
    const calls = async () =>
      Number(
        (
          await db.sql`SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::int AS n FROM pg_stat_user_tables WHERE relname = 'schema_migrations'`
        )[0]!.n,
      );
    const started = Date.now();
    for (let i = 0; i < 200; i++) expect((await call(`${srv.url}/readyz`)).status).toBe(200);
    const seconds = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 600));
    expect(await calls()).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
  });
});

describe('webapp envelope', () => {
  const initData = () => makeInitData(signer, { messengerBotId: a.messengerBotId, user: { id: 777, first_name: 'E' } });
  const postWebapp = (body: string | Uint8Array, gzip = false) =>
    call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
      body,
    });

  it('a large or compressed body is authenticated from its first 64 KiB; events first, further on, is 400 naming the rule', async () => {
    const events = Array.from({ length: 400 }, () => ({
      eventId: randomUUID(),
      eventName: 'open',
      eventDate: '2026-11-22T10:00:00Z',
      eventType: 'interaction',
      propsString: { pad: 'p'.repeat(200) },
    }));
    const envelopeFirst = JSON.stringify({ botId: a.botId, auth: { initData: initData() }, events });
    expect(envelopeFirst.length).toBeGreaterThan(64 * 1024);
    expect((await postWebapp(envelopeFirst)).status).toBe(202);
    expect(
      (
        await postWebapp(
          gzipSync(
            JSON.stringify({
              botId: a.botId,
              auth: { initData: initData() },
              events: events.map((e) => ({ ...e, eventId: randomUUID() })),
            }),
          ),
          true,
        )
      ).status,
    ).toBe(202);
    const eventsFirst = JSON.stringify({
      events: events.map((e) => ({ ...e, eventId: randomUUID() })),
      botId: a.botId,
      auth: { initData: initData() },
    });
    const r = await postWebapp(eventsFirst);
    expect([r.status, r.body.error, r.body.details]).toEqual([400, 'invalid_body', { envelopeMaxBytes: 65536 }]);
    // A short body may order its keys as it likes.
    expect(
      (
        await postWebapp(
          JSON.stringify({
            events: events.slice(0, 2).map((e) => ({ ...e, eventId: randomUUID() })),
            auth: { initData: initData() },
            botId: a.botId,
          }),
        )
      ).status,
    ).toBe(202);
  });

  it('a botId repeated further on with another value is refused, not taken from either place', async () => {
    const events = Array.from({ length: 400 }, () => ({
      eventId: randomUUID(),
      eventName: 'open',
      eventDate: '2026-11-22T10:00:00Z',
      eventType: 'interaction',
      propsString: { pad: 'p'.repeat(200) },
    }));
    const body = `{"botId":"${a.botId}","auth":{"initData":${JSON.stringify(initData())}},"events":${JSON.stringify(events)},"botId":"${b.botId}"}`;
    const r = await postWebapp(body);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_body']);
    const [{ n }] = await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ${events[0]!.eventId}`;
    expect(n).toBe(0);
  });
});
