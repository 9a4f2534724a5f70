import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSENGER_TEST_KEY } from '../../src/config/config.js';
import { admin, call, provision, type Provisioned, type Res } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner, type InitDataOptions } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
const stranger = newSigner();
const BOT = 5550001;

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    INITDATA_PUBLIC_KEYS: `${MESSENGER_TEST_KEY},${signer.publicKeyHex}`,
    RATE_LIMIT_BURST: '100000',
    CORS_ALLOW_ORIGINS: 'https://app.example,https://other.example',
  });
  p = await provision(srv.url, { messengerBotId: BOT });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const webEvent = (over: Record<string, unknown> = {}) => ({
  eventId: randomUUID(),
  eventName: 'button_click',
  eventDate: new Date().toISOString(),
  eventType: 'interaction',
  ...over,
});
const initData = (o: Partial<InitDataOptions> = {}) => makeInitData(signer, { messengerBotId: BOT, ...o });
const initDataFor = (own: Provisioned, o: Partial<InitDataOptions> = {}) =>
  initData({ messengerBotId: own.messengerBotId, ...o });

function postWebapp(body: unknown, headers: Record<string, string> = {}, path = '/tg/webapp'): Promise<Res> {
  return call(`${srv.url}${path}`, { method: 'POST', headers, body });
}

/** One scrape of /metrics: the value of a series, 0 while it has not appeared. */
async function metrics(): Promise<(series: string) => number> {
  const r = await admin(srv.url, 'GET', '/metrics');
  expect(r.status).toBe(200);
  const values = new Map(
    r.text
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => {
        const at = l.lastIndexOf(' ');
        return [l.slice(0, at), Number(l.slice(at + 1))] as const;
      }),
  );
  return (series) => values.get(series) ?? 0;
}

const expectError = (r: Res, status: number, error: string) => {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error).toBe(error);
  expect(typeof r.body.message).toBe('string');
};

describe('webapp: valid initData', () => {
  it('stores events for the initData user on the webapp channel, origin custom, nothing promoted', async () => {
    const e = webEvent({
      platformUserId: '1',
      eventOrigin: 'platform',
      propsString: { 'tg.currency': 'USD', page: 'home' },
      propsLong: { n: 2 },
      propsBool: { ok: true },
      text: 'hi',
    });
    const r = await postWebapp({ botId: p.botId, auth: { initData: initData() }, events: [e] });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({
      accepted: 1,
      rejected: 0,
      not_consumed_duplicated: 0,
      stored_not_billed: 0,
      diagnostics_truncated: false,
      diagnostics: [],
    });
    const [row] = await db.sql`SELECT * FROM events WHERE event_id = ${e.eventId}`;
    expect(row).toMatchObject({
      project_id: p.projectId,
      bot_id: p.botId,
      platform_user_id: '424242',
      origin: 'custom',
      channel: 'webapp',
      event_type: 'interaction',
      props_string: { 'tg.currency': 'USD', page: 'home' },
      props_long: { n: 2 },
      props_bool: { ok: true },
      tg: null,
      text: 'hi',
      billed: true,
    });
  });

  it('ignores propsFloat silently', async () => {
    const e = webEvent({ propsFloat: { ratio: 0.5 } });
    const r = await postWebapp({ botId: p.botId, auth: { initData: initData() }, events: [e] });
    expect(r.body.diagnostics).toEqual([]);
    const [row] = await db.sql`SELECT props_float FROM events WHERE event_id = ${e.eventId}`;
    expect(row!.props_float).toBeNull();
  });

  it('serves /messenger/webapp, takes gzip and text/plain', async () => {
    const events = [webEvent(), webEvent()];
    expect(
      (
        await postWebapp(
          { botId: p.botId, auth: { initData: initData() }, events: [events[0]] },
          {},
          '/messenger/webapp',
        )
      ).status,
    ).toBe(202);
    const gz = gzipSync(JSON.stringify({ botId: p.botId, auth: { initData: initData() }, events: [events[1]] }));
    expect((await postWebapp(gz, { 'content-encoding': 'gzip', 'content-type': 'text/plain' })).status).toBe(202);
    const [{ n }] =
      await db.sql`SELECT count(*)::int AS n FROM events WHERE event_id = ANY(${events.map((e) => e.eventId)}::uuid[])`;
    expect(n).toBe(2);
  });

  it('reuses one initData across batches', async () => {
    const HIT = 'tg_ingest_cache_requests_total{cache="initdata",result="hit"}';
    const MISS = 'tg_ingest_cache_requests_total{cache="initdata",result="miss"}';
    const VERIFY = 'tg_ingest_pipeline_tasks_total{kind="verify",where="pool"}';
    const before = await metrics();
    const data = initData();
    const batches = 5;
    for (let i = 0; i < batches; i++)
      expect((await postWebapp({ botId: p.botId, auth: { initData: data }, events: [webEvent()] })).status).toBe(202);
    const after = await metrics();
    // The signature was checked once, in the pool; every reuse was answered from the verification cache.
    expect(after(MISS) - before(MISS)).toBe(1);
    expect(after(HIT) - before(HIT)).toBe(batches - 1);
    expect(after(VERIFY) - before(VERIFY)).toBe(1);
  });

  it('keeps the user JSON exactly as received, escapes included', async () => {
    const userJson =
      '{"id":515151,"first_name":"Grace","username":"grace","photo_url":"https:\\/\\/t.me\\/i\\/userpic\\/320\\/x.svg"}';
    const r = await postWebapp({ botId: p.botId, auth: { initData: initData({ userJson }) }, events: [webEvent()] });
    expect(r.status).toBe(202);
  });

  it('upserts the profile from initData, free of charge', async () => {
    const own = await provision(srv.url, { eventAllowance: 10 });
    const user = {
      id: 777001,
      first_name: 'Linus',
      last_name: 'T',
      username: 'linus',
      language_code: 'fi',
      is_premium: true,
    };
    const r = await postWebapp({
      botId: own.botId,
      auth: { initData: initDataFor(own, { user }) },
      events: [webEvent(), webEvent()],
    });
    expect(r.status).toBe(202);
    const [u] = await db.sql`SELECT * FROM users WHERE project_id = ${own.projectId}`;
    expect(u).toMatchObject({
      messenger_user_id: '777001',
      first_name: 'Linus',
      last_name: 'T',
      username: 'linus',
      language_code: 'fi',
      is_premium: true,
    });
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body).toMatchObject({
      eventsBilled: 2,
      eventsStored: 2,
    });
    // initData is authoritative: a field the user removed is cleared.
    await postWebapp({
      botId: own.botId,
      auth: { initData: initDataFor(own, { user: { id: 777001, first_name: 'Linus' } }) },
      events: [webEvent()],
    });
    const [after] = await db.sql`SELECT username, last_name, is_premium FROM users WHERE project_id = ${own.projectId}`;
    expect(after).toEqual({ username: null, last_name: null, is_premium: false });
  });

  it('checks events one by one: a bad event never fails the batch', async () => {
    const good = webEvent();
    const r = await postWebapp({
      botId: p.botId,
      auth: { initData: initData() },
      events: [
        good,
        webEvent({ eventId: 'x' }),
        webEvent({ eventName: '' }),
        webEvent({ eventDate: 'soon' }),
        webEvent({ eventType: 'odd' }),
        'junk',
        good,
      ],
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 2, rejected: 4, not_consumed_duplicated: 1 });
    expect(r.body.diagnostics.map((d: { code: string; path: string }) => [d.code, d.path])).toEqual([
      ['event_id_invalid', 'event_id'],
      ['event_missing_identity', 'event_name'],
      ['event_date_invalid', 'event_date'],
      ['event_type_unknown', 'event_type'],
      ['event_invalid', 'event'],
    ]);
  });
});

describe('webapp: initData refused with 401', () => {
  const now = () => Math.floor(Date.now() / 1000);
  it.each([
    [
      'a tampered field',
      { tamper: { auth_date: String(Math.floor(Date.now() / 1000) - 5) } },
      'initdata_signature_invalid',
    ],
    ['a tampered user', { tamper: { user: '{"id":1}' } }, 'initdata_signature_invalid'],
    ['another bot', { messengerBotId: BOT + 1 }, 'initdata_signature_invalid'],
    ['no signature', { omit: ['signature'] }, 'initdata_signature_missing'],
    ['no auth_date', { omit: ['auth_date'] }, 'initdata_auth_date_missing'],
    ['no user', { omit: ['user'] }, 'initdata_user_missing'],
    ['a signature of the wrong length', { signature: 'AAAA' }, 'initdata_signature_invalid'],
    ['a signature that is not base64url', { signature: `${'!'.repeat(86)}` }, 'initdata_signature_invalid'],
    [
      'a signature of 64 zero bytes',
      { signature: Buffer.alloc(64).toString('base64url') },
      'initdata_signature_invalid',
    ],
    // Dated when the case runs, not when the file is collected: the file's earlier cases take a while.
    ['an expired auth_date', () => ({ authDate: now() - 901 }), 'initdata_expired'],
    ['an auth_date from the future', () => ({ authDate: now() + 120 }), 'initdata_from_future'],
  ] as const)('%s', async (_name, o, code) => {
    const r = await postWebapp({
      botId: p.botId,
      auth: { initData: initData((typeof o === 'function' ? o() : o) as Partial<InitDataOptions>) },
      events: [webEvent()],
    });
    expectError(r, 401, code);
    expect(r.text).not.toContain('signature=');
  });

  it('a key that is not configured', async () => {
    expectError(
      await postWebapp({
        botId: p.botId,
        auth: { initData: makeInitData(stranger, { messengerBotId: BOT }) },
        events: [webEvent()],
      }),
      401,
      'initdata_signature_invalid',
    );
  });

  it('empty, missing or unparsable initData', async () => {
    expectError(
      await postWebapp({ botId: p.botId, auth: { initData: '' }, events: [webEvent()] }),
      401,
      'initdata_empty',
    );
    expectError(await postWebapp({ botId: p.botId, events: [webEvent()] }), 401, 'initdata_empty');
    expectError(
      await postWebapp({ botId: p.botId, auth: { initData: 5 }, events: [webEvent()] }),
      401,
      'initdata_empty',
    );
    expectError(
      await postWebapp({ botId: p.botId, auth: { initData: 'a=%E0%A4%A&signature=x' }, events: [webEvent()] }),
      401,
      'initdata_malformed',
    );
    expectError(
      await postWebapp({ botId: p.botId, auth: { initData: 'noequals' }, events: [webEvent()] }),
      401,
      'initdata_malformed',
    );
  });

  it('accepts a date less than a minute ahead and honours the age limit', async () => {
    expect(
      (
        await postWebapp({
          botId: p.botId,
          auth: { initData: initData({ authDate: now() + 30 }) },
          events: [webEvent()],
        })
      ).status,
    ).toBe(202);
    expect(
      (
        await postWebapp({
          botId: p.botId,
          auth: { initData: initData({ authDate: now() - 880 }) },
          events: [webEvent()],
        })
      ).status,
    ).toBe(202);
  });

  it('an unknown bot gives 401 without revealing whether it exists', async () => {
    const r = await postWebapp({ botId: randomUUID(), auth: { initData: initData() }, events: [webEvent()] });
    expectError(r, 401, 'bot_unknown');
  });
});

describe('webapp: other statuses', () => {
  it('400 for an empty, oversized or fully rejected batch, and for a bad botId', async () => {
    const auth = { initData: initData() };
    expectError(await postWebapp({ botId: p.botId, auth, events: [] }), 400, 'events_invalid');
    expectError(
      await postWebapp({ botId: p.botId, auth, events: Array.from({ length: 1001 }, () => webEvent()) }),
      400,
      'events_invalid',
    );
    expectError(await postWebapp({ botId: p.botId, auth }), 400, 'events_invalid');
    expectError(await postWebapp({ botId: 'bot-1', auth, events: [webEvent()] }), 400, 'bot_id_invalid');
    expectError(await postWebapp('[]'), 400, 'invalid_body');
    expectError(await postWebapp('{'), 400, 'invalid_json');
    const all = await postWebapp({
      botId: p.botId,
      auth,
      events: [webEvent({ eventId: 1 }), webEvent({ eventName: null })],
    });
    expect(all.status).toBe(400);
    expect(all.body).toMatchObject({ accepted: 0, rejected: 2 });
  });

  it('409 when the bot is not linked, not configured, or mini-app ingest is off', async () => {
    const own = await provision(srv.url);
    const body = () => ({ botId: own.botId, auth: { initData: initDataFor(own) }, events: [webEvent()] });
    await admin(srv.url, 'PATCH', `/admin/bots/${own.botId}`, { miniAppIngest: false });
    expectError(await postWebapp(body()), 409, 'miniapp_ingest_disabled');
    await admin(srv.url, 'PATCH', `/admin/bots/${own.botId}`, { miniAppIngest: true, projectId: null });
    expectError(await postWebapp(body()), 409, 'webapp_bot_not_linked');
    await admin(srv.url, 'PATCH', `/admin/bots/${own.botId}`, { projectId: own.projectId, messengerBotId: null });
    expectError(await postWebapp(body()), 409, 'webapp_bot_not_configured');
  });

  it('402 when the allowance is used up', async () => {
    const own = await provision(srv.url, { eventAllowance: 1 });
    expect(
      (await postWebapp({ botId: own.botId, auth: { initData: initDataFor(own) }, events: [webEvent()] })).status,
    ).toBe(202);
    expectError(
      await postWebapp({ botId: own.botId, auth: { initData: initDataFor(own) }, events: [webEvent()] }),
      402,
      'allowance_exhausted',
    );
  });

  it('415 for other content types', async () => {
    expectError(
      await postWebapp(JSON.stringify({ botId: p.botId }), { 'content-type': 'application/xml' }),
      415,
      'unsupported_media_type',
    );
  });

  it('answers CORS preflight and sets Access-Control-Allow-Origin from the allow-list', async () => {
    const pre = await fetch(`${srv.url}/tg/webapp`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, content-encoding',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-encoding');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    const post = await postWebapp(
      { botId: p.botId, auth: { initData: initData() }, events: [webEvent()] },
      { origin: 'https://other.example' },
    );
    expect(post.headers.get('access-control-allow-origin')).toBe('https://other.example');
    const denied = await postWebapp(
      { botId: p.botId, auth: { initData: initData() }, events: [webEvent()] },
      { origin: 'https://evil.example' },
    );
    expect(denied.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('webapp: rate limit per bot and user', () => {
  it('429 with Retry-After once a user exhausts the bucket; other users are unaffected', async () => {
    const limited = await startServer(db.url, {
      INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
      RATE_LIMIT_BURST: '2',
      RATE_LIMIT_PER_MIN: '1',
    });
    try {
      const own = await provision(limited.url);
      const send = (id: number) =>
        call(`${limited.url}/tg/webapp`, {
          method: 'POST',
          body: { botId: own.botId, auth: { initData: initDataFor(own, { user: { id } }) }, events: [webEvent()] },
        });
      expect((await send(1)).status).toBe(202);
      expect((await send(1)).status).toBe(202);
      const r = await send(1);
      expectError(r, 429, 'rate_limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await send(2)).status).toBe(202);
    } finally {
      await limited.stop();
    }
  });
});

describe('webapp: default keys', () => {
  it('trusts only the production key unless told otherwise', async () => {
    const plain = await startServer(db.url);
    try {
      const own = await provision(plain.url);
      const r = await call(`${plain.url}/tg/webapp`, {
        method: 'POST',
        body: { botId: own.botId, auth: { initData: initDataFor(own) }, events: [webEvent()] },
      });
      expectError(r, 401, 'initdata_signature_invalid');
    } finally {
      await plain.stop();
    }
  });
});
