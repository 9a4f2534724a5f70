// Hostile input on both endpoints: each gets a clear 4xx (or a repaired event with a warning) and
// the process stays healthy.
import { connect as netConnect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, type Res, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '100000', INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

type Endpoint = 'bot_api' | 'webapp';
const send = (ep: Endpoint, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Res> =>
  ep === 'bot_api'
    ? call(`${srv.url}/tg`, {
        method: 'POST',
        headers: { 'x-api-key': p.token, 'content-type': 'application/json', ...headers },
        body,
      })
    : call(`${srv.url}/tg/webapp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
const wrap = (ep: Endpoint, eventsJson: string) =>
  ep === 'bot_api'
    ? `{"events":${eventsJson}}`
    : `{"botId":"${p.botId}","auth":{"initData":${JSON.stringify(makeInitData(signer, { messengerBotId: p.messengerBotId }))}},"events":${eventsJson}}`;
const eventJson = (ep: Endpoint, extra = '') => {
  const e = serverEvent();
  if (ep === 'webapp') {
    delete e.platformUserId;
    delete e.eventOrigin;
  }
  return { id: e.eventId as string, json: `${JSON.stringify(e).slice(0, -1)}${extra}}` };
};

async function healthy(): Promise<void> {
  expect((await call(`${srv.url}/healthz`)).status).toBe(200);
  const ok = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
  expect(ok.status).toBe(202);
}

describe.each(['bot_api', 'webapp'] as const)('%s', (ep) => {
  it.each([
    ['truncated JSON', '{"events": [', 400, 'invalid_json'],
    ['not JSON', 'events=1', 400, 'invalid_json'],
    ['an array', '[]', 400, 'invalid_body'],
    ['a string', '"events"', 400, 'invalid_body'],
    ['null', 'null', 400, 'invalid_body'],
    ['a number', '42', 400, 'invalid_body'],
  ])('%s → %s %s', async (_name, body, status, error) => {
    const r = await send(ep, body);
    expect(r.status).toBe(status);
    expect(r.body.error).toBe(error);
  });

  it('invalid UTF-8 → 400 invalid_utf8', async () => {
    const { json } = eventJson(ep);
    const bytes = Buffer.concat([
      Buffer.from(wrap(ep, `[${json.slice(0, -1)},"text":"`)),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}]}'),
    ]);
    const r = await send(ep, bytes);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_utf8');
  });

  it('JSON nested deeper than MAX_JSON_DEPTH (64) is 400 invalid_json, anywhere in the body; up to it is fine', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const top = await send(ep, deep);
    expect([top.status, top.body.error, top.body.details]).toEqual([400, 'invalid_json', { maxDepth: 64 }]);
    const inEvent = await send(ep, wrap(ep, `[${eventJson(ep, `,"extra":${deep}`).json}]`));
    expect([inEvent.status, inEvent.body.error, inEvent.body.details]).toEqual([400, 'invalid_json', { maxDepth: 64 }]);
    expect(inEvent.body.message).toContain('MAX_JSON_DEPTH');
    // The body is level 1, events 2, an event 3: 61 more levels make 64, one more is too many.
    const nested = (k: number) => `${'['.repeat(k)}${']'.repeat(k)}`;
    const atLimit = eventJson(ep, `,"extra":${nested(61)},"propsString":{"k":${nested(60)}}`);
    const ok = await send(ep, wrap(ep, `[${atLimit.json}]`));
    expect(ok.status, ok.text).toBe(202);
    expect(ok.body.diagnostics).toEqual([
      expect.objectContaining({ event_id: atLimit.id, code: 'field_unknown', path: 'extra' }),
      expect.objectContaining({ event_id: atLimit.id, code: 'prop_value_type_invalid', path: 'props_string.k' }),
    ]);
    const over = await send(ep, wrap(ep, `[${eventJson(ep, `,"extra":${nested(62)}`).json}]`));
    expect([over.status, over.body.error]).toEqual([400, 'invalid_json']);
    await healthy();
  });

  it('long strings are truncated with a warning; a long key is refused with a short path', async () => {
    // As long as each endpoint's body limit allows: 10 MB on bot_api, 300 KB on webapp (WEBAPP_MAX_BODY_BYTES is 1
    // MiB).
    const big = 'x'.repeat(ep === 'bot_api' ? 10 * 1024 * 1024 : 300 * 1024);
    const { id, json } = eventJson(ep, `,"text":"${big}","propsString":{"v":"${big}","${big}":"k"}`);
    const r = await send(ep, wrap(ep, `[${json}]`));
    expect(r.status).toBe(202);
    expect(r.body.diagnostics.map((d: { code: string }) => d.code).sort()).toEqual([
      'prop_key_invalid',
      'prop_value_truncated',
      'text_truncated',
    ]);
    const keyDiag = r.body.diagnostics.find((d: { code: string }) => d.code === 'prop_key_invalid');
    expect(keyDiag.path.length).toBeLessThan(100);
    const [row] =
      await db.sql`SELECT length(text) AS t, length(props_string->>'v') AS v FROM events WHERE event_id = ${id}`;
    expect(row).toEqual({ t: 4096, v: 4096 });
    await healthy();
  });

  it('numbers beyond 2^53 are refused per property, never rounded into storage', async () => {
    const { id, json } = eventJson(
      ep,
      ',"propsLong":{"big":18446744073709551616,"edge":9007199254740993,"ok":9007199254740991}',
    );
    const r = await send(ep, wrap(ep, `[${json}]`));
    expect(r.status).toBe(202);
    expect(r.body.diagnostics.map((d: { path: string }) => d.path).sort()).toEqual([
      'props_long.big',
      'props_long.edge',
    ]);
    const [row] = await db.sql`SELECT props_long FROM events WHERE event_id = ${id}`;
    expect(row!.props_long).toEqual({ ok: 9007199254740991 });
  });

  it('duplicate JSON keys: the last one wins, as in JSON.parse', async () => {
    const { id, json } = eventJson(ep, ',"eventName":"second","propsString":{"k":"a","k":"b"}');
    const r = await send(ep, wrap(ep, `[${json}]`));
    expect(r.status).toBe(202);
    const [row] = await db.sql`SELECT event_name, props_string FROM events WHERE event_id = ${id}`;
    expect(row).toEqual({ event_name: 'second', props_string: { k: 'b' } });
  });

  it('__proto__ and constructor keys in every object pollute nothing', async () => {
    const poison = '"__proto__":{"polluted":true,"platformUserId":"666"},"constructor":{"prototype":{"polluted":true}}';
    const { id, json } = eventJson(
      ep,
      `,${poison},"propsString":{"__proto__":"p","constructor":"c"},"propsBool":{${poison}}`,
    );
    const body =
      ep === 'bot_api'
        ? `{${poison},"events":[${json}],"users":[{"messengerUserId":5,${poison}}],"bot":{${poison},"name":"b"}}`
        : `{${poison},"botId":"${p.botId}","auth":{${poison},"initData":${JSON.stringify(makeInitData(signer, { messengerBotId: p.messengerBotId }))}},"events":[${json}]}`;
    const r = await send(ep, body);
    expect(r.status, r.text).toBe(202);
    const [row] = await db.sql`SELECT platform_user_id, props_string, props_bool FROM events WHERE event_id = ${id}`;
    expect(row!.platform_user_id).not.toBe('666');
    expect(row!.props_string).toEqual(JSON.parse('{"__proto__":"p","constructor":"c"}'));
    expect(row!.props_bool).toBeNull();
    // A plain event sent afterwards carries nothing it did not send.
    const plain = eventJson(ep);
    expect((await send(ep, wrap(ep, `[${plain.json}]`))).status).toBe(202);
    const [after] = await db.sql`SELECT props_string, platform_user_id FROM events WHERE event_id = ${plain.id}`;
    expect(after!.props_string).toBeNull();
    expect(after!.platform_user_id).not.toBe('666');
  });

  it('a gzip bomb → 413, broken gzip → 400, other encodings → 415', async () => {
    // On webapp the envelope is read first (from the inflated body's first 64 KiB): a bomb behind a valid
    // one is 413; one without any is refused for that, before anything more is inflated.
    const bomb = gzipSync(
      Buffer.concat([Buffer.from(wrap(ep, '[').slice(0, -1)), Buffer.alloc(40 * 1024 * 1024, 0x20), Buffer.from(']}')]),
    );
    const r = await send(ep, bomb, { 'content-encoding': 'gzip' });
    expect(r.status).toBe(413);
    expect(r.body.error).toBe('payload_too_large');
    if (ep === 'webapp') {
      const bare = await send(ep, gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20)), { 'content-encoding': 'gzip' });
      expect([bare.status, bare.body.error]).toEqual([400, 'invalid_body']);
    }
    expect((await send(ep, Buffer.from('garbage'), { 'content-encoding': 'gzip' })).body.error).toBe('invalid_gzip');
    expect((await send(ep, '{}', { 'content-encoding': 'deflate' })).status).toBe(415);
    await healthy();
  });

  it('a wrong Content-Type → 415', async () => {
    const r = await send(ep, wrap(ep, `[${eventJson(ep).json}]`), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(r.status).toBe(415);
    expect(r.body.error).toBe('unsupported_media_type');
  });

  it('a body over the limit (MAX_BODY_BYTES on bot_api, WEBAPP_MAX_BODY_BYTES on webapp) → 413 before it is read', async () => {
    const limit = ep === 'bot_api' ? 32 * 1024 * 1024 : 1024 * 1024;
    const r = await send(ep, 'x'.repeat(limit + 1024 * 1024));
    expect(r.status).toBe(413);
    expect(r.body.details).toEqual({ maxBytes: limit });
    // Far past the limit, the connection is closed under the client rather than read to the end.
    const huge = await send(ep, 'x'.repeat(3 * limit)).then(
      (x) => (x.status === 413 ? 413 : `${x.status} ${x.text}`),
      (err: Error) => err.message,
    );
    expect([413, 'fetch failed']).toContain(huge);
    await healthy();
  });
});

describe('headers', () => {
  it('a long header value gets a clear 4xx; one past what the HTTP parser takes closes the connection; the server stays up', async () => {
    const long = await postBotApi(srv.url, `tgk_${'a'.repeat(20_000)}`, { events: [serverEvent()] });
    expect(long.status).toBe(401);
    const huge = await new Promise<string>((resolve) => {
      const s = netConnect(srv.port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => (got += d));
      s.on('close', () => resolve(got));
      s.on('error', () => resolve(got));
      s.write(`POST /tg HTTP/1.1\r\nHost: x\r\nX-Junk: ${'j'.repeat(1_000_000)}\r\nContent-Length: 2\r\n\r\n{}`);
    });
    expect(huge === '' || /^HTTP\/1\.1 4\d\d/.test(huge)).toBe(true);
    await healthy();
  });

  it('a request id from the client is echoed only when it is sane', async () => {
    const sane = await call(`${srv.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(sane.headers.get('x-request-id')).toBe('abc-123');
    const odd = await call(`${srv.url}/healthz`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('a body sent after its answer', () => {
  it('is read and dropped, never held: refusals answered before their bodies do not use up MAX_INFLIGHT_BODY_BYTES', async () => {
    // 1 MiB of budget; each refusal below is answered from its head, then sent 300 KiB of body.
    const small = await startServer(db.url, { MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024) });
    try {
      for (let i = 0; i < 6; i++) {
        const answered = await new Promise<string>((resolve, reject) => {
          const s = netConnect(small.port, '127.0.0.1');
          let got = '';
          s.on('error', reject);
          s.on('data', (d) => {
            got += d;
            if (!got.includes('\r\n\r\n')) return;
            // The answer is in: now the body, then the connection is done with.
            s.end(Buffer.alloc(300 * 1024, 0x20), () => resolve(got));
          });
          s.write(`POST /tg HTTP/1.1\r\nHost: x\r\nX-API-Key: tgk_wrong${i}\r\nContent-Length: ${300 * 1024}\r\n\r\n`);
        });
        expect(answered).toMatch(/^HTTP\/1\.1 (401|429) /);
      }
      await new Promise((r) => setTimeout(r, 200));
      // The operator's gauge of bytes held: nothing is in flight, so nothing is held.
      const metrics = (await admin(small.url, 'GET', '/metrics')).text;
      expect(/^tg_ingest_inflight_body_bytes (\d+)/m.exec(metrics)?.[1]).toBe('0');
      const provisioned = await provision(small.url);
      const ok = await postBotApi(small.url, provisioned.token, { events: [serverEvent()] });
      expect(ok.status).toBe(202);
    } finally {
      await small.stop();
    }
  });
});
