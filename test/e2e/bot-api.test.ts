import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { NO_SHEDDING, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    RATE_LIMIT_BURST: '100000',
    MAX_BODY_BYTES: '2000000',
    ...NO_SHEDDING,
  });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const stored = (eventId: string) => db.sql`SELECT * FROM events WHERE event_id = ${eventId}`;

describe('bot_api: success', () => {
  it('stores accepted events and answers 202 with the counts', async () => {
    const e = serverEvent({
      text: 'hello',
      propsString: { plan: 'pro' },
      propsLong: { n: 3 },
      propsFloat: { f: 1.5 },
      propsBool: { b: true },
    });
    const r = await postBotApi(srv.url, p.token, { events: [e] });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({
      accepted: 1,
      rejected: 0,
      not_consumed_duplicated: 0,
      stored_not_billed: 0,
      diagnostics_truncated: false,
      diagnostics: [],
    });
    const [row] = await stored(e.eventId);
    expect(row).toMatchObject({
      project_id: p.projectId,
      bot_id: p.botId,
      event_id: e.eventId,
      event_name: 'message_received',
      event_type: 'message',
      platform_user_id: '1001',
      origin: 'custom',
      channel: 'bot_api',
      text: 'hello',
      props_string: { plan: 'pro' },
      props_long: { n: 3 },
      props_float: { f: 1.5 },
      props_bool: { b: true },
      tg: null,
      billed: true,
    });
    expect(row!.event_date.toISOString()).toBe('2026-11-22T10:00:00.000Z');
    expect(Math.abs(row!.received_at.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('serves the same handler under /messenger', async () => {
    const e = serverEvent();
    const r = await postBotApi(srv.url, p.token, { events: [e] }, {}, '/messenger');
    expect(r.status).toBe(202);
    expect(await stored(e.eventId)).toHaveLength(1);
  });

  it('accepts a gzip body', async () => {
    const events = Array.from({ length: 200 }, () => serverEvent());
    const r = await postBotApi(srv.url, p.token, gzipSync(JSON.stringify({ events })), {
      'content-encoding': 'gzip',
      'content-type': 'application/json',
    });
    expect(r.status).toBe(202);
    expect(r.body.accepted).toBe(200);
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${events.map((e) => e.eventId)}::uuid[])`;
    expect(n).toBe(200);
  });

  it('accepts version "1", drops unknown event fields with a warning and ignores a smuggled project or bot id', async () => {
    const other = await provision(srv.url);
    const e = serverEvent({ projectId: other.projectId, botId: other.botId, extra: { nested: true } });
    const r = await postBotApi(srv.url, p.token, {
      version: '1',
      events: [e],
      projectId: other.projectId,
      botId: other.botId,
    });
    expect(r.status).toBe(202);
    expect(
      r.body.diagnostics.map((d: { code: string; path: string; severity: string }) => [d.code, d.path, d.severity]),
    ).toEqual([
      ['field_unknown', 'projectId', 'warning'],
      ['field_unknown', 'botId', 'warning'],
      ['field_unknown', 'extra', 'warning'],
    ]);
    const [row] = await stored(e.eventId);
    expect(row).toMatchObject({ project_id: p.projectId, bot_id: p.botId });
  });

  it('works through a large batch of 1000 events via the worker pool', async () => {
    /** One scrape of /metrics: the value of a series, 0 while it has not appeared. */
    const metrics = async (): Promise<(series: string) => number> => {
      const m = await admin(srv.url, 'GET', '/metrics');
      expect(m.status).toBe(200);
      const values = new Map(
        m.text
          .split('\n')
          .filter((l) => l !== '' && !l.startsWith('#'))
          .map((l) => {
            const at = l.lastIndexOf(' ');
            return [l.slice(0, at), Number(l.slice(at + 1))] as const;
          }),
      );
      return (series) => values.get(series) ?? 0;
    };
    const POOL = 'tg_ingest_pipeline_tasks_total{kind="bot_api",where="pool"}';
    const INLINE = 'tg_ingest_pipeline_tasks_total{kind="bot_api",where="inline"}';
    const before = await metrics();
    const events = Array.from({ length: 1000 }, (_, i) =>
      serverEvent({ propsString: { i: String(i), pad: 'x'.repeat(100) } }),
    );
    const r = await postBotApi(srv.url, p.token, { events });
    expect(r.status).toBe(202);
    expect(r.body.accepted).toBe(1000);
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${events.map((e) => e.eventId)}::uuid[])`;
    expect(n).toBe(1000);
    // The body (well over INLINE_MAX_BYTES) was parsed in a worker, not on the main thread.
    const afterLarge = await metrics();
    expect(afterLarge(POOL) - before(POOL)).toBe(1);
    expect(afterLarge(INLINE) - before(INLINE)).toBe(0);
    // A small body stays on the main thread.
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    const afterSmall = await metrics();
    expect(afterSmall(INLINE) - afterLarge(INLINE)).toBe(1);
    expect(afterSmall(POOL) - afterLarge(POOL)).toBe(0);
  });
});

describe('bot_api: request-level errors', () => {
  const expectError = (
    r: { status: number; body: { error: string; message: string } },
    status: number,
    error: string,
  ) => {
    expect(r.status).toBe(status);
    expect(r.body.error).toBe(error);
    expect(typeof r.body.message).toBe('string');
  };

  it('401 without a key, with an unknown key, with a revoked key', async () => {
    expectError(await postBotApi(srv.url, null, { events: [serverEvent()] }), 401, 'api_key_missing');
    expectError(
      await postBotApi(srv.url, 'tgk_unknownunknownunknownunknownunknownunknown', { events: [serverEvent()] }),
      401,
      'api_key_invalid',
    );
    expectError(await postBotApi(srv.url, 'garbage', { events: [serverEvent()] }), 401, 'api_key_invalid');
    const other = await provision(srv.url);
    await admin(srv.url, 'DELETE', `/admin/tokens/${other.tokenId}`);
    expectError(await postBotApi(srv.url, other.token, { events: [serverEvent()] }), 401, 'api_key_invalid');
  });

  it('403 when API ingestion is off and when the bot has no project', async () => {
    const other = await provision(srv.url);
    await admin(srv.url, 'PATCH', `/admin/bots/${other.botId}`, { apiIngest: false });
    expectError(await postBotApi(srv.url, other.token, { events: [serverEvent()] }), 403, 'api_ingest_disabled');
    await admin(srv.url, 'PATCH', `/admin/bots/${other.botId}`, { apiIngest: true, projectId: null });
    const r = await postBotApi(srv.url, other.token, { events: [serverEvent()] });
    expectError(r, 403, 'bot_not_linked');
    expect(r.body.message).toContain('not linked to a project');
  });

  it('400 for bodies that are not a batch', async () => {
    for (const [body, error] of [
      ['{"events": [', 'invalid_json'],
      ['[1,2]', 'invalid_body'],
      ['"text"', 'invalid_body'],
      [{}, 'events_invalid'],
      [{ events: 'x' }, 'events_invalid'],
      [{ events: [] }, 'events_invalid'],
      [{ events: Array.from({ length: 1001 }, () => serverEvent()) }, 'events_invalid'],
      [{ events: [serverEvent()], version: '2' }, 'unsupported_version'],
      [{ events: [serverEvent()], version: null }, 'unsupported_version'],
    ] as const) {
      expectError(await postBotApi(srv.url, p.token, body), 400, error);
    }
  });

  it('400 and nothing stored when an event lacks a field required at parse time', async () => {
    for (const field of ['eventId', 'eventDate', 'eventType', 'eventOrigin']) {
      const good = serverEvent();
      const bad = serverEvent({ [field]: undefined });
      const r = await postBotApi(srv.url, p.token, { events: [good, bad] });
      expectError(r, 400, 'event_invalid');
      expect(r.body.details).toEqual({ index: 1, field });
      expect(await stored(good.eventId)).toHaveLength(0);
      const typed = await postBotApi(srv.url, p.token, { events: [serverEvent({ [field]: 12 })] });
      expectError(typed, 400, 'event_invalid');
    }
    expectError(await postBotApi(srv.url, p.token, { events: [serverEvent(), null] }), 400, 'event_invalid');
  });

  it('400 with the normal body when every event is rejected', async () => {
    const r = await postBotApi(srv.url, p.token, {
      events: [serverEvent({ platformUserId: undefined }), serverEvent({ platformUserId: undefined })],
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      accepted: 0,
      rejected: 2,
      not_consumed_duplicated: 0,
      stored_not_billed: 0,
      diagnostics_truncated: false,
    });
    expect(r.body.diagnostics).toHaveLength(2);
  });

  it('415 for other content types and encodings, 400 for broken gzip, 413 for bombs', async () => {
    expectError(
      await postBotApi(srv.url, p.token, JSON.stringify({ events: [serverEvent()] }), { 'content-type': 'text/xml' }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await postBotApi(srv.url, p.token, JSON.stringify({ events: [serverEvent()] }), { 'content-encoding': 'br' }),
      415,
      'unsupported_encoding',
    );
    expectError(
      await postBotApi(srv.url, p.token, Buffer.from('not gzip'), { 'content-encoding': 'gzip' }),
      400,
      'invalid_gzip',
    );
    const bomb = gzipSync(Buffer.alloc(50_000_000, 0x20));
    expect(bomb.length).toBeLessThan(2_000_000);
    expectError(await postBotApi(srv.url, p.token, bomb, { 'content-encoding': 'gzip' }), 413, 'payload_too_large');
    expectError(await postBotApi(srv.url, p.token, 'x'.repeat(2_100_000)), 413, 'payload_too_large');
    expect((await call(`${srv.url}/healthz`)).status).toBe(200);
  });
});

describe('bot_api: per-event rules', () => {
  it('rejects events with errors and reports each with its code and path', async () => {
    const cases = [
      [{ platformUserId: undefined }, 'event_missing_identity', 'platform_user_id'],
      [{ eventName: undefined }, 'event_missing_identity', 'event_name'],
      [{ eventName: '' }, 'event_missing_identity', 'event_name'],
      [{ platformUserId: 12345 }, 'platform_user_id_invalid', 'platform_user_id'],
      [{ platformUserId: '99999999999999999999' }, 'platform_user_id_invalid', 'platform_user_id'],
      [{ eventId: 'not-a-uuid' }, 'event_id_invalid', 'event_id'],
      [{ eventDate: '31.01.2026' }, 'event_date_invalid', 'event_date'],
      [{ eventOrigin: 'sdk' }, 'event_origin_invalid', 'event_origin'],
    ] as const;
    const good = serverEvent();
    const events = [good, ...cases.map(([over]) => serverEvent(over))];
    const r = await postBotApi(srv.url, p.token, { events });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 1, rejected: cases.length, not_consumed_duplicated: 0 });
    cases.forEach(([, code, path], i) => {
      expect(r.body.diagnostics[i]).toEqual({
        event_id: events[i + 1]!.eventId,
        code,
        severity: 'error',
        path,
        message: expect.any(String),
      });
    });
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id::text = ANY(${events.map((e) => String(e.eventId))}::text[])`;
    expect(n).toBe(1);
  });

  it('repairs events with warnings and stores the repaired values', async () => {
    const keys1025 = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`k${String(i).padStart(4, '0')}`, i]));
    const cases: [Record<string, unknown>, string, string, (row: Record<string, any>) => void][] = [
      [{ eventType: 'purchase' }, 'event_type_unknown', 'event_type', (r) => expect(r.event_type).toBe('platform')],
      [
        { propsString: { $os: 'ios', ok: '1' } },
        'prop_key_reserved',
        'props_string.$os',
        (r) => expect(r.props_string).toEqual({ ok: '1' }),
      ],
      [
        { propsLong: { 'bad-key': 1 } },
        'prop_key_invalid',
        'props_long.bad-key',
        (r) => expect(r.props_long).toBeNull(),
      ],
      [{ propsLong: { n: 'five' } }, 'prop_value_type_invalid', 'props_long.n', (r) => expect(r.props_long).toBeNull()],
      [{ propsLong: { n: 1.5 } }, 'prop_value_type_invalid', 'props_long.n', (r) => expect(r.props_long).toBeNull()],
      [{ propsBool: { b: 'true' } }, 'prop_value_type_invalid', 'props_bool.b', (r) => expect(r.props_bool).toBeNull()],
      [
        { propsString: { s: 5 } },
        'prop_value_type_invalid',
        'props_string.s',
        (r) => expect(r.props_string).toBeNull(),
      ],
      [
        { propsString: { s: 'é'.repeat(5000) } },
        'prop_value_truncated',
        'props_string.s',
        (r) => expect(r.props_string.s).toBe('é'.repeat(4096)),
      ],
      [
        { propsLong: keys1025 },
        'props_limit_exceeded',
        'props',
        (r) => {
          expect(Object.keys(r.props_long)).toHaveLength(1024);
          expect(r.props_long.k1024).toBeUndefined();
        },
      ],
      [{ text: 'x'.repeat(5000) }, 'text_truncated', 'text', (r) => expect(r.text).toHaveLength(4096)],
      [{ propsFloat: [1, 2] }, 'props_bucket_invalid', 'props_float', (r) => expect(r.props_float).toBeNull()],
      [{ text: 'a\u0000b' }, 'string_nul_removed', 'text', (r) => expect(r.text).toBe('ab')],
      [
        { eventOrigin: 'platform', propsString: { 'tg.total_amount': '5' } },
        'prop_type_mismatch',
        'props_string.tg.total_amount',
        (r) => {
          expect(r.props_string).toEqual({ 'tg.total_amount': '5' });
          expect(r.tg).toBeNull();
        },
      ],
    ];
    const events = cases.map(([over]) => serverEvent(over));
    const r = await postBotApi(srv.url, p.token, { events });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: cases.length, rejected: 0 });
    for (let i = 0; i < cases.length; i++) {
      const [, code, path, check] = cases[i]!;
      expect(r.body.diagnostics).toContainEqual({
        event_id: events[i]!.eventId,
        code,
        severity: 'warning',
        path,
        message: expect.any(String),
      });
      const [row] = await stored(events[i]!.eventId);
      check(row!);
    }
  });

  it('discards repeated eventIds within a request, first occurrence wins', async () => {
    const first = serverEvent({ eventName: 'first' });
    const r = await postBotApi(srv.url, p.token, {
      events: [first, { ...first, eventName: 'second' }, { ...first, eventId: first.eventId.toUpperCase() }],
    });
    expect(r.body).toMatchObject({ accepted: 1, rejected: 0, not_consumed_duplicated: 2 });
    const rows = await stored(first.eventId);
    expect(rows.map((x) => x.event_name)).toEqual(['first']);
  });

  it('promotes tg.* registry fields of platform events into tg', async () => {
    const e = serverEvent({
      eventOrigin: 'platform',
      eventType: 'message',
      propsString: { 'tg.chat_type': 'private', 'tg.custom_thing': 'x', plain: 'y' },
      propsLong: { 'tg.chat_id': 10, 'tg.message_id': 20 },
      propsBool: { 'tg.is_premium': true },
    });
    const c = serverEvent({ eventOrigin: 'custom', propsString: { 'tg.chat_type': 'private' } });
    expect((await postBotApi(srv.url, p.token, { events: [e, c] })).status).toBe(202);
    const [row] = await stored(e.eventId);
    expect(row!.tg).toEqual({ chat_type: 'private', chat_id: 10, message_id: 20, is_premium: true });
    expect(row!.props_string).toEqual({ 'tg.custom_thing': 'x', plain: 'y' });
    expect(row!.props_long).toBeNull();
    const [crow] = await stored(c.eventId);
    expect(crow!.tg).toBeNull();
    expect(crow!.props_string).toEqual({ 'tg.chat_type': 'private' });
  });

  it('truncates diagnostics at 100', async () => {
    const r = await postBotApi(srv.url, p.token, {
      events: Array.from({ length: 120 }, () => serverEvent({ eventType: 'odd' })),
    });
    expect(r.body.diagnostics).toHaveLength(100);
    expect(r.body.diagnostics_truncated).toBe(true);
    expect(r.body.accepted).toBe(120);
  });
});

describe('bot_api: redelivery and billing', () => {
  it('treats an event stored earlier as accepted, stored once and billed once', async () => {
    const own = await provision(srv.url);
    const events = [serverEvent(), serverEvent()];
    const first = await postBotApi(srv.url, own.token, { events });
    const again = await postBotApi(srv.url, own.token, { events: [...events, serverEvent()] });
    expect(first.body).toMatchObject({ accepted: 2, rejected: 0, not_consumed_duplicated: 0, stored_not_billed: 0 });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ accepted: 3, rejected: 0, not_consumed_duplicated: 0, stored_not_billed: 0 });
    const [{ n }] = await db.sql`SELECT count(*)::int AS n FROM events WHERE project_id = ${own.projectId}`;
    expect(n).toBe(3);
    const usage = await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`);
    expect(usage.body).toMatchObject({ eventsBilled: 3, eventsStored: 3 });
  });

  it('bills a messenger action once: another connection reporting it is stored_not_billed', async () => {
    const own = await provision(srv.url);
    const second = (await admin(srv.url, 'POST', `/admin/bots/${own.botId}/tokens`)).body.token as string;
    const payment = (over: Record<string, unknown> = {}) =>
      serverEvent({
        eventOrigin: 'platform',
        eventType: 'payment',
        eventName: 'successful_payment',
        propsString: { 'tg.currency': 'XTR', 'tg.telegram_payment_charge_id': 'charge-1' },
        propsLong: { 'tg.total_amount': 50 },
        ...over,
      });
    const a = payment();
    const b = payment();
    const c = payment();
    const r1 = await postBotApi(srv.url, own.token, { events: [a] });
    expect(r1.body.stored_not_billed).toBe(0);
    const r2 = await postBotApi(srv.url, second, { events: [b] });
    expect(r2.status).toBe(202);
    expect(r2.body).toMatchObject({ accepted: 1, stored_not_billed: 1 });
    const r3 = await postBotApi(srv.url, own.token, { events: [c] });
    expect(r3.body.stored_not_billed).toBe(0);
    // Redelivery from the second connection is neither billed nor counted as stored_not_billed again.
    const r4 = await postBotApi(srv.url, second, { events: [b] });
    expect(r4.body).toMatchObject({ accepted: 1, stored_not_billed: 0 });
    const billed = await db.sql`SELECT event_id, billed FROM events WHERE project_id = ${own.projectId}`;
    expect(Object.fromEntries(billed.map((x) => [x.event_id, x.billed]))).toEqual({
      [a.eventId]: true,
      [b.eventId]: false,
      [c.eventId]: true,
    });
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body).toMatchObject({
      eventsBilled: 2,
      eventsStored: 3,
    });

    // Message and update actions; custom events never carry one.
    const msg = () => serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.chat_id': 5, 'tg.message_id': 6 } });
    expect((await postBotApi(srv.url, own.token, { events: [msg()] })).body.stored_not_billed).toBe(0);
    expect(
      (
        await postBotApi(srv.url, second, {
          events: [msg(), serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 77 } })],
        })
      ).body.stored_not_billed,
    ).toBe(1);
    expect(
      (
        await postBotApi(srv.url, own.token, {
          events: [serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 77 } })],
        })
      ).body.stored_not_billed,
    ).toBe(1);
    expect(
      (
        await postBotApi(srv.url, second, {
          events: [serverEvent({ eventOrigin: 'custom', propsLong: { 'tg.update_id': 77 } })],
        })
      ).body.stored_not_billed,
    ).toBe(0);
  });

  it('cannot be dodged: one free report per action and connection, every further one is billed', async () => {
    const own = await provision(srv.url, { eventAllowance: 100 });
    const second = (await admin(srv.url, 'POST', `/admin/bots/${own.botId}/tokens`)).body.token as string;
    const update = () => serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 987654 } });
    expect((await postBotApi(srv.url, own.token, { events: [update()] })).body.stored_not_billed).toBe(0);
    // 40 new eventIds repeating the action on another connection: the first is free, 39 are billed.
    const first = await postBotApi(srv.url, second, { events: Array.from({ length: 20 }, update) });
    expect(first.body).toMatchObject({ accepted: 20, stored_not_billed: 1 });
    const later = await postBotApi(srv.url, second, { events: Array.from({ length: 20 }, update) });
    expect(later.body).toMatchObject({ accepted: 20, stored_not_billed: 0 });
    const usage = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body;
    expect(usage).toMatchObject({ eventsStored: 41, eventsBilled: 40 });
    // So the allowance is reached as for any other events.
    expect((await postBotApi(srv.url, second, { events: Array.from({ length: 60 }, update) })).status).toBe(202);
    const refused = await postBotApi(srv.url, second, { events: [update()] });
    expect(refused.status).toBe(402);
    const [{ billed, free }] =
      await db.sql`SELECT count(*) FILTER (WHERE billed)::int AS billed, count(*) FILTER (WHERE NOT billed)::int AS free FROM events WHERE project_id = ${own.projectId}`;
    expect({ billed, free }).toEqual({ billed: 100, free: 1 });
  });

  it('two connections reporting one action in the same moment bill it once', async () => {
    const own = await provision(srv.url);
    const second = (await admin(srv.url, 'POST', `/admin/bots/${own.botId}/tokens`)).body.token as string;
    const ev = () => serverEvent({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 123456 } });
    const [r1, r2] = await Promise.all([
      postBotApi(srv.url, own.token, { events: [ev()] }),
      postBotApi(srv.url, second, { events: [ev()] }),
    ]);
    expect(r1.body.stored_not_billed + r2.body.stored_not_billed).toBe(1);
    const [{ billed }] =
      await db.sql`SELECT count(*) FILTER (WHERE billed)::int AS billed FROM events WHERE project_id = ${own.projectId}`;
    expect(billed).toBe(1);
  });
});

describe('bot_api: quota', () => {
  it('answers 402 once the allowance is used up; redeliveries cost nothing', async () => {
    const own = await provision(srv.url, { eventAllowance: 5 });
    const three = [serverEvent(), serverEvent(), serverEvent()];
    expect((await postBotApi(srv.url, own.token, { events: three })).status).toBe(202);
    expect((await postBotApi(srv.url, own.token, { events: three })).status).toBe(202);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body.eventsBilled).toBe(3);
    // Crossing the limit is allowed for the batch that crosses it, not after.
    expect(
      (await postBotApi(srv.url, own.token, { events: [serverEvent(), serverEvent(), serverEvent()] })).status,
    ).toBe(202);
    const refused = await postBotApi(srv.url, own.token, { events: [serverEvent()] });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toBe('allowance_exhausted');
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body.eventsBilled).toBe(6);

    await admin(srv.url, 'PATCH', `/admin/projects/${own.projectId}`, { eventAllowance: 100 });
    expect((await postBotApi(srv.url, own.token, { events: [serverEvent()] })).status).toBe(202);
  });

  it('never exceeds the allowance by more than one batch under concurrency', async () => {
    const own = await provision(srv.url, { eventAllowance: 50 });
    const results = await Promise.all(
      Array.from({ length: 40 }, () =>
        postBotApi(srv.url, own.token, { events: [serverEvent(), serverEvent(), serverEvent(), serverEvent()] }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 202 || s === 402)).toBe(true);
    const [{ billed }] =
      await db.sql`SELECT count(*)::int AS billed FROM events WHERE project_id = ${own.projectId} AND billed`;
    expect(billed).toBeGreaterThanOrEqual(50);
    expect(billed).toBeLessThanOrEqual(53);
    expect(statuses.filter((s) => s === 202).length * 4).toBe(billed);
  });

  it('profiles sent with events are free', async () => {
    const own = await provision(srv.url, { eventAllowance: 1 });
    const r = await postBotApi(srv.url, own.token, {
      events: [serverEvent({ platformUserId: '500' })],
      users: [
        { messengerUserId: 500, username: 'u' },
        { messengerUserId: 501, username: 'v' },
      ],
    });
    expect(r.status).toBe(202);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body.eventsBilled).toBe(1);
  });
});

describe('bot_api: profiles, bot snapshot and revenue', () => {
  it('upserts users[] and a bare profile for every platformUserId', async () => {
    const own = await provision(srv.url);
    const r = await postBotApi(srv.url, own.token, {
      events: [serverEvent({ platformUserId: '900' }), serverEvent({ platformUserId: '901' })],
      users: [
        { messengerUserId: 900, username: 'nine', firstName: 'Nine', isPremium: true },
        { messengerUserId: 'bad' },
      ],
    });
    expect(r.status).toBe(202);
    expect(r.body.diagnostics).toEqual([
      {
        event_id: null,
        code: 'user_profile_invalid',
        severity: 'warning',
        path: 'users[1]',
        message: expect.any(String),
      },
    ]);
    const users =
      await db.sql`SELECT messenger_user_id, username, first_name, is_premium, first_seen, last_seen FROM users WHERE project_id = ${own.projectId} ORDER BY 1`;
    expect(users.map((u) => [u.messenger_user_id, u.username, u.first_name, u.is_premium])).toEqual([
      ['900', 'nine', 'Nine', true],
      ['901', null, null, null],
    ]);
    expect(users[0]!.first_seen).toBeInstanceOf(Date);
    // A later bare sighting keeps the known profile; a later profile updates it.
    await postBotApi(srv.url, own.token, {
      events: [serverEvent({ platformUserId: '900' })],
      users: [{ messengerUserId: 901, firstName: 'Nine-oh-one' }],
    });
    const after =
      await db.sql`SELECT messenger_user_id, username, first_name FROM users WHERE project_id = ${own.projectId} ORDER BY 1`;
    expect(after.map((u) => [u.messenger_user_id, u.username, u.first_name])).toEqual([
      ['900', 'nine', 'Nine'],
      ['901', null, 'Nine-oh-one'],
    ]);
  });

  it('a commit holding the requests of several projects writes each user row to its own project', async () => {
    // One writer connection, held up by a lock on users: the next requests gather into one commit. (Not shed: on a
    // busy machine project a's second request can arrive past the shedding bound, behind the others.)
    const one = await startServer(db.url, { RATE_LIMIT_BURST: '100000', DB_WRITER_CONNECTIONS: '1', ...NO_SHEDDING });
    let release!: () => void;
    let holder: Promise<unknown> = Promise.resolve();
    try {
      const [a, b, c] = [await provision(one.url), await provision(one.url), await provision(one.url)];
      const metric = async (name: string) => {
        const line = (await (await admin(one.url, 'GET', '/metrics')).text)
          .split('\n')
          .find((l) => l.startsWith(`${name} `));
        return Number(line?.split(' ')[1] ?? 0);
      };
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      holder = db.sql.begin(async (tx) => {
        await tx`LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE`;
        locked();
        await released;
      });
      await isLocked;
      const commitsBefore = await metric('tg_ingest_commit_rows_count{path="copy"}');
      const first = postBotApi(one.url, a.token, { events: [serverEvent({ platformUserId: '930' })] });
      while ((await metric('tg_ingest_writer_pending_requests')) < 1) await new Promise((r) => setTimeout(r, 20));
      const gathered = [
        postBotApi(one.url, a.token, {
          events: [serverEvent({ platformUserId: '931' }), serverEvent({ platformUserId: '932' })],
        }),
        postBotApi(one.url, b.token, {
          events: [serverEvent({ platformUserId: '932' }), serverEvent({ platformUserId: '933' })],
        }),
        postBotApi(one.url, c.token, {
          events: [serverEvent({ platformUserId: '934' })],
          users: [{ messengerUserId: 935, username: 'c935' }],
        }),
      ];
      while ((await metric('tg_ingest_writer_pending_requests')) < 4) await new Promise((r) => setTimeout(r, 20));
      release();
      await holder;
      expect((await Promise.all([first, ...gathered])).map((r) => r.status)).toEqual([202, 202, 202, 202]);
      expect((await metric('tg_ingest_commit_rows_count{path="copy"}')) - commitsBefore).toBe(2);
      const rows = await db.sql<{ project_id: string; id: string; username: string | null }[]>`
        SELECT project_id, messenger_user_id AS id, username FROM users WHERE project_id IN (${a.projectId}, ${b.projectId}, ${c.projectId})`;
      const name = new Map([
        [a.projectId, 'a'],
        [b.projectId, 'b'],
        [c.projectId, 'c'],
      ]);
      expect(
        rows
          .map((r) => [name.get(r.project_id), r.id, r.username])
          .sort((x, y) => `${x[0]}${x[1]}`.localeCompare(`${y[0]}${y[1]}`)),
      ).toEqual([
        ['a', '930', null],
        ['a', '931', null],
        ['a', '932', null],
        ['b', '932', null],
        ['b', '933', null],
        ['c', '934', null],
        ['c', '935', 'c935'],
      ]);
    } finally {
      // A failure above must not leave users locked for the tests after this one.
      release?.();
      await holder;
      await one.stop();
    }
  });

  it('moves last_seen forward for a user seen again, at minute resolution', async () => {
    const own = await provision(srv.url);
    // Rows this instance has never written: one last seen 5 minutes ago, one 10 seconds ago.
    await db.sql`INSERT INTO users (project_id, messenger_user_id, first_seen, last_seen) VALUES
      (${own.projectId}, 910, now() - interval '1 day', now() - interval '5 minutes'),
      (${own.projectId}, 911, now() - interval '1 day', now() - interval '10 seconds')`;
    const before = await db.sql<
      { id: string; last: Date }[]
    >`SELECT messenger_user_id AS id, last_seen AS last FROM users WHERE project_id = ${own.projectId} ORDER BY 1`;
    const r = await postBotApi(srv.url, own.token, {
      events: [serverEvent({ platformUserId: '910' }), serverEvent({ platformUserId: '911' })],
    });
    expect(r.status).toBe(202);
    const after = await db.sql<
      { id: string; first: Date; last: Date; recent: boolean }[]
    >`SELECT messenger_user_id AS id, first_seen AS first, last_seen AS last, last_seen > now() - interval '5 seconds' AS recent FROM users WHERE project_id = ${own.projectId} ORDER BY 1`;
    expect(after.map((u) => [u.id, u.recent])).toEqual([
      ['910', true],
      ['911', false],
    ]);
    expect(after[1]!.last).toEqual(before[1]!.last);
    expect(after.every((u) => Date.now() - u.first.getTime() > 86_000_000)).toBe(true);
  });

  it('updates the bot snapshot', async () => {
    const own = await provision(srv.url);
    const r = await postBotApi(srv.url, own.token, {
      events: [serverEvent()],
      bot: { messengerBotId: own.messengerBotId, name: 'Shop bot', description: 'Sells things', starsAmount: 1500 },
    });
    expect(r.body.diagnostics).toEqual([]);
    const bot = await admin(srv.url, 'GET', `/admin/bots/${own.botId}`);
    expect(bot.body).toMatchObject({
      name: 'Shop bot',
      description: 'Sells things',
      starsAmount: 1500,
      snapshotAt: expect.any(String),
    });
  });

  it("ignores a snapshot naming another bot's messenger id, stores the events, and never fails another tenant's commit", async () => {
    const victim = await provision(srv.url);
    const squatter = await provision(srv.url);
    const unconfigured = await admin(srv.url, 'POST', '/admin/bots', { projectId: squatter.projectId });
    const unconfiguredToken = (await admin(srv.url, 'POST', `/admin/bots/${unconfigured.body.botId}/tokens`)).body
      .token as string;
    // Concurrent with the victim's own traffic, so the snapshots share group commits with it.
    const [taken, squat, own] = await Promise.all([
      postBotApi(srv.url, squatter.token, {
        events: [serverEvent(), serverEvent()],
        bot: { messengerBotId: victim.messengerBotId, name: 'Not mine' },
      }),
      postBotApi(srv.url, unconfiguredToken, {
        events: [serverEvent()],
        bot: { messengerBotId: 424242424242, name: 'Squat' },
      }),
      postBotApi(srv.url, victim.token, { events: [serverEvent()] }),
    ]);
    for (const r of [taken, squat]) {
      expect(r.status).toBe(202);
      expect(r.body.diagnostics).toEqual([
        expect.objectContaining({
          event_id: null,
          code: 'bot_snapshot_mismatch',
          severity: 'warning',
          path: 'bot.messenger_bot_id',
        }),
      ]);
    }
    expect(taken.body.accepted).toBe(2);
    expect(own.status).toBe(202);
    const bots =
      await db.sql`SELECT bot_id, messenger_bot_id, name FROM bots WHERE bot_id IN (${squatter.botId}, ${unconfigured.body.botId}) ORDER BY bot_id`;
    expect(bots.map((b) => b.name)).toEqual([null, null]);
    expect((await admin(srv.url, 'GET', `/admin/bots/${unconfigured.body.botId}`)).body.messengerBotId).toBeNull();
    expect((await admin(srv.url, 'GET', `/admin/bots/${victim.botId}`)).body.messengerBotId).toBe(
      victim.messengerBotId,
    );
  });

  it('reports revenue of an external payment recorded as the spec shows', async () => {
    const own = await provision(srv.url);
    const pay = (amount: number, currency: string, extra: Record<string, string> = {}) =>
      serverEvent({
        eventOrigin: 'platform',
        eventType: 'payment',
        eventName: 'successful_payment',
        platformUserId: '123456789',
        propsString: {
          'tg.currency': currency,
          'tg.invoice_payload': `order-${randomUUID()}`,
          'tg.provider_payment_charge_id': `acq-${randomUUID()}`,
          ...extra,
        },
        propsLong: { 'tg.total_amount': amount },
      });
    const r = await postBotApi(srv.url, own.token, {
      events: [
        pay(1999, 'USD'),
        pay(1, 'USD'),
        pay(500, 'EUR'),
        serverEvent({
          eventName: 'successful_payment',
          propsString: { 'tg.currency': 'USD' },
          propsLong: { 'tg.total_amount': 999 },
        }),
      ],
    });
    expect(r.status).toBe(202);
    const [row] = await db.sql`SELECT tg FROM events WHERE project_id = ${own.projectId} AND tg IS NOT NULL LIMIT 1`;
    expect(Object.keys(row!.tg).sort()).toEqual([
      'currency',
      'invoice_payload',
      'provider_payment_charge_id',
      'total_amount',
    ]);
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/reports/revenue`)).body, {
        timeout: 10_000,
      })
      .toMatchObject([
        { currency: 'EUR', totalAmount: 500 },
        { currency: 'USD', totalAmount: 2000 },
      ]);
  });
});
