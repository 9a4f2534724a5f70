// The whole HTTP surface against generated hostile requests, over a raw socket: methods, paths with
// broken percent-encoding and odd bytes, many and large headers, bodies of every shape, gzip good
// and bad. After every case the process is alive, /healthz answers, and the answer was a 4xx (or a
// 503), or a 2xx from one of the public routes that need no credentials.
import { randomUUID } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    MAX_BODY_BYTES: '65536',
    WEBAPP_MAX_BODY_BYTES: '16384',
    RATE_LIMIT_BURST: '1000000',
    WORKERS: '2',
  });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

/**
 * Sends raw bytes and reads the status code of the first answer; null when the server closed without one (or kept
 * waiting).
 */
function exchange(raw: Buffer, waitMs = 1500): Promise<number | null> {
  return new Promise((resolve) => {
    const sock = netConnect(srv.port, '127.0.0.1');
    let got = '';
    const done = (status: number | null) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => done(null), waitMs);
    sock.on('data', (d) => {
      got += d.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3}) /.exec(got);
      if (m !== null) done(Number(m[1]));
    });
    sock.on('error', () => done(null));
    sock.on('close', () => done(null));
    sock.write(raw);
  });
}

const PUBLIC_GETS = new Set([
  '/',
  '/healthz',
  '/readyz',
  '/metrics',
  '/openapi.json',
  '/admin',
  '/admin/',
  '/admin/page/admin.js',
  '/admin/page/admin.css',
  '/admin/page/icon.svg',
]);

const BROKEN = [
  '%FF',
  '%',
  '%zz',
  '%E0%A4%A',
  '%00',
  '%C0%AF',
  '%%',
  '%2',
  '\u00ff',
  '\u0001',
  '..',
  '%2e%2e',
  '~',
  ' ',
];
const segment = fc.oneof(
  fc.constantFrom(...BROKEN),
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.uuid(),
  fc.stringMatching(/^[A-Za-z0-9%._~!$&'()*+,;=:@-]{0,20}$/),
);
const path = fc.oneof(
  fc.constantFrom(
    '/tg',
    '/messenger',
    '/tg/webapp',
    '/messenger/webapp',
    '/healthz',
    '/readyz',
    '/metrics',
    '/openapi.json',
    '/admin',
    '/admin/',
    '/admin/projects',
    '/admin/bots',
    '/admin/page/admin.js',
  ),
  fc
    .tuple(
      fc.constantFrom('/admin/projects/', '/admin/bots/', '/admin/tokens/', '/tg/', '/admin/page/', '/'),
      fc.array(segment, { maxLength: 4 }),
    )
    .map(([base, segs]) => base + segs.join('/')),
  fc
    .tuple(fc.constantFrom('/tg', '/tg/webapp', '/admin/projects'), fc.string({ maxLength: 40 }))
    .map(([base, q]) => `${base}?${q.replace(/[\s#]/g, '')}`),
  fc.integer({ min: 1, max: 8000 }).map((n) => `/${'a/'.repeat(n / 2)}`),
);
const contentType = fc.constantFrom(
  ['content-type', 'application/json'] as [string, string],
  ['content-type', 'text/plain;charset=UTF-8'] as [string, string],
);
const credential = fc.oneof(
  fc.constant(['x-api-key', `tgk_${'A'.repeat(43)}`] as [string, string]),
  fc.constant(['authorization', 'Bearer not-the-admin-token'] as [string, string]),
);
const method = fc.oneof(
  { arbitrary: fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'PUT'), weight: 9 },
  { arbitrary: fc.constantFrom('HEAD', 'TRACE', 'BREW', 'post', 'M-SEARCH'), weight: 1 },
);
// Header values a client controls, bounded to one line (CR and LF would start another request).
const headerValue = fc
  .oneof(
    { arbitrary: fc.stringMatching(/^[ -~]{0,64}$/), weight: 8 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')), weight: 1 },
    { arbitrary: fc.integer({ min: 0, max: 9000 }).map((n) => 'v'.repeat(n)), weight: 1 },
  )
  .map((v) => v.replace(/[\r\n]/g, ''));
const header = fc.oneof(
  fc.tuple(
    fc.constantFrom(
      'content-type',
      'content-encoding',
      'x-api-key',
      'authorization',
      'x-request-id',
      'x-forwarded-for',
      'origin',
      'transfer-encoding',
      'expect',
      'connection',
    ),
    headerValue,
  ),
  fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,30}$/), headerValue),
  fc.constant(['x-api-key', `tgk_${'A'.repeat(43)}`] as [string, string]),
  fc.constant(['content-encoding', 'gzip'] as [string, string]),
);
const webappBody = (events: unknown) =>
  JSON.stringify({
    botId: p.botId,
    auth: { initData: 'query_id=x&user=%7B%22id%22%3A1%7D&auth_date=1&signature=abc' },
    events,
  });
const body = fc.oneof(
  fc.constant(Buffer.alloc(0)),
  fc.uint8Array({ maxLength: 4096 }).map((b) => Buffer.from(b)),
  fc.json({ maxDepth: 6 }).map((j) => Buffer.from(j)),
  fc.array(fc.anything({ maxDepth: 4 }), { maxLength: 5 }).map((events) => Buffer.from(webappBody(events))),
  fc.anything({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify({ events: [v] }) ?? 'null')),
  fc.integer({ min: 1, max: 60_000 }).map((n) => Buffer.from(`${'['.repeat(n)}${']'.repeat(n)}`)),
  fc.uint8Array({ maxLength: 2048 }).map((b) => gzipSync(Buffer.from(b))),
  fc.integer({ min: 1, max: 8 }).map((mib) => gzipSync(Buffer.alloc(mib * 1024 * 1024, 0x20))),
  fc.uint8Array({ minLength: 30, maxLength: 200 }).map((b) => gzipSync(Buffer.from(b)).subarray(0, 20)),
);
/** How the body is framed: honest Content-Length, chunked, none, or a Content-Length that lies. */
const framing = fc.constantFrom('length', 'length', 'length', 'length', 'chunked', 'none', 'short', 'garbage');

function frame(m: string, pth: string, headers: [string, string][], b: Buffer, how: string): Buffer {
  const lines = [`${m} ${pth} HTTP/1.1`, 'Host: fuzz'];
  for (const [k, v] of headers)
    if (k.toLowerCase() !== 'content-length' && k.toLowerCase() !== 'transfer-encoding') lines.push(`${k}: ${v}`);
  let payload = b;
  if (how === 'length') lines.push(`Content-Length: ${b.length}`);
  else if (how === 'short') lines.push(`Content-Length: ${b.length + 10}`);
  else if (how === 'garbage') lines.push('Content-Length: 12abc');
  else if (how === 'chunked') {
    lines.push('Transfer-Encoding: chunked');
    payload = Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from(`\r\n0\r\n\r\n`)]);
  }
  return Buffer.concat([
    Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'),
    how === 'none' ? Buffer.alloc(0) : payload,
  ]);
}

describe('the HTTP surface under generated hostile requests', () => {
  it('never ends the process or stalls it, and answers only 4xx or 503 (or 2xx on public routes)', async () => {
    const seen = new Map<number | null, number>();
    await fc.assert(
      fc.asyncProperty(
        method,
        path,
        fc.array(header, { maxLength: 12 }),
        fc.option(credential),
        fc.option(contentType),
        body,
        framing,
        fc.integer({ min: 0, max: 9 }),
        async (m, pth, random, cred, type, b, how, dice) => {
          const headers = [...(type === null ? [] : [type]), ...(cred === null ? [] : [cred]), ...random];
          const all =
            dice === 0
              ? [
                  ...headers,
                  ...Array.from({ length: 150 }, (_, i) => [`x-pad-${i}`, 'y'.repeat(50)] as [string, string]),
                ]
              : headers;
          // A body shorter than announced keeps the server waiting for the rest, as it should.
          const status = await exchange(frame(m, pth, all, b, how), how === 'short' ? 300 : 1000);
          seen.set(status, (seen.get(status) ?? 0) + 1);
          expect(srv.proc.exitCode, `process ended after ${m} ${pth.slice(0, 80)}`).toBeNull();
          const health = await call(`${srv.url}/healthz`);
          expect(health.status).toBe(200);
          if (status === null) return;
          const bare = pth.split('?')[0]!;
          const publicRoute = (m === 'GET' || m === 'HEAD') && PUBLIC_GETS.has(bare);
          const preflight = m === 'OPTIONS' && (bare === '/tg/webapp' || bare === '/messenger/webapp');
          const ok =
            (status >= 400 && status < 500) ||
            status === 503 ||
            ((publicRoute || preflight) && status >= 200 && status < 300);
          expect(ok, `${m} ${pth.slice(0, 80)} (${how}, ${b.length} B) → ${status}`).toBe(true);
        },
      ),
      { numRuns: 300, interruptAfterTimeLimit: 120_000 },
    );
    // The generator reached the service's own answers, not only the HTTP parser's.
    console.log(`answers: ${JSON.stringify([...seen].sort())}`);
    expect([...seen.keys()].filter((s) => s !== null && s >= 400 && s < 500).length).toBeGreaterThanOrEqual(4);
    expect(seen.get(null) ?? 0).toBeLessThan(150);
    const logs = srv.output.join('\n');
    expect(logs).not.toContain('"level":50');
  }, 180_000);

  // The shapes of the second round of hostile input, sent with credentials that work, so that they
  // reach the pipeline, the writer and the plans: deep JSON, canonical values at and past their
  // length, many profiles, many large rejects, hostile tracking plans.
  const deepValue = fc
    .integer({ min: 55, max: 80 })
    .map((k) => JSON.parse(`${'['.repeat(k)}${']'.repeat(k)}`) as unknown);
  const longText = fc
    .tuple(fc.constantFrom('a', '😀', '\u0000', 'é', '"', '\\', '\ud800'), fc.integer({ min: 1000, max: 5000 }))
    .map(([c, n]) => c.repeat(n).slice(0, 5000));
  const tgString = fc.constantFrom(
    'tg.telegram_payment_charge_id',
    'tg.currency',
    'tg.invoice_payload',
    'tg.start_param',
    'tg.command',
    'tg.chat_title',
    'tg.callback_data',
  );
  const hostileEvent = fc.record(
    {
      eventId: fc.uuid(),
      eventName: fc.oneof(fc.constantFrom('successful_payment', 'looped', 'word'), longText),
      eventDate: fc.constantFrom('2026-11-22T10:00:00Z', 'bad date'),
      eventType: fc.constantFrom('payment', 'message'),
      eventOrigin: fc.constantFrom('platform', 'custom'),
      platformUserId: fc.constantFrom('1', '9223372036854775807', 'x'),
      text: longText,
      propsString: fc.dictionary(tgString, longText, { maxKeys: 2 }),
      extra: fc.option(deepValue),
    },
    { requiredKeys: ['eventId', 'eventName', 'eventDate', 'eventType', 'eventOrigin', 'platformUserId'] },
  );
  const profiles = fc
    .integer({ min: 0, max: 1100 })
    .map((n) => Array.from({ length: n }, (_, i) => ({ messengerUserId: i + 1 })));
  const ingest = fc
    .record({
      events: fc.array(hostileEvent, { minLength: 1, maxLength: 3 }),
      users: profiles,
      deep: fc.option(deepValue),
    })
    .map(({ events, users, deep }) => ({
      kind: 'ingest' as const,
      body: Buffer.from(JSON.stringify({ events, users, ...(deep === null ? {} : { deep }) })),
    }));
  const plan = fc
    .oneof(
      fc.constant({ $ref: '#' }),
      fc.constant({ anyOf: [{ $ref: '#/$defs/a' }], $defs: { a: { not: { $ref: '#' } } } }),
      fc.constant({ properties: { text: { pattern: '^(\\w+\\s?)*$' } } }),
      fc.constant({ properties: { text: { pattern: '(?<=a)b|(a)\\1' } } }),
      fc.constant({ type: 'object', additionalProperties: { $ref: '#' } }),
      deepValue.map((v) => ({ enum: [v] })),
      fc.constant({ type: 'objekt' }),
    )
    .map((schema) => ({
      kind: 'plan' as const,
      body: Buffer.from(
        JSON.stringify({ mode: 'block', unplannedEvents: 'allow', events: { looped: schema, word: schema } }),
      ),
    }));

  it('the pipeline, the writer and the plans under those shapes: only the documented answers, never a 5xx but 503', async () => {
    const seen = new Map<number | null, number>();
    // Run first: a request accepted whatever is generated, so that the writer's path is always taken. Of the generated
    // ones 2–7 in ~115 are accepted, and none were in one run of twenty-odd.
    const accepted = {
      kind: 'ingest' as const,
      body: Buffer.from(
        JSON.stringify({
          events: [
            {
              eventId: randomUUID(),
              eventName: 'successful_payment',
              eventDate: '2026-11-22T10:00:00Z',
              eventType: 'payment',
              eventOrigin: 'platform',
              platformUserId: '9223372036854775807',
              text: '\u0000é"\\'.repeat(1000),
            },
          ],
          users: Array.from({ length: 1000 }, (_, i) => ({ messengerUserId: i + 1 })),
        }),
      ),
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ arbitrary: ingest, weight: 4 }, { arbitrary: plan, weight: 1 }),
        fc.boolean(),
        async (req, gzip) => {
          const payload = gzip ? gzipSync(req.body) : req.body;
          const headers: [string, string][] = [
            ['content-type', 'application/json'],
            ...(gzip ? [['content-encoding', 'gzip'] as [string, string]] : []),
          ];
          const raw =
            req.kind === 'ingest'
              ? frame('POST', '/tg', [...headers, ['x-api-key', p.token]], payload, 'length')
              : frame(
                  'PUT',
                  `/admin/projects/${p.projectId}/tracking-plan`,
                  [...headers, ['authorization', 'Bearer test-admin-token-0123456789']],
                  payload,
                  'length',
                );
          // Past WRITE_TIMEOUT_MS, the longest a commit may keep an ingestion request waiting for its 503.
          const status = await exchange(raw, 15_000);
          seen.set(status, (seen.get(status) ?? 0) + 1);
          expect(srv.proc.exitCode).toBeNull();
          expect((await call(`${srv.url}/healthz`)).status).toBe(200);
          if (req === accepted) expect(status, 'the request known to be accepted').toBe(202);
          const allowed = req.kind === 'ingest' ? [202, 400, 413, 503] : [200, 400, 413];
          expect(allowed, `${req.kind} (${req.body.length} B) → ${status}`).toContain(status);
        },
      ),
      { numRuns: 120, interruptAfterTimeLimit: 90_000, examples: [[accepted, true]] },
    );
    console.log(`answers: ${JSON.stringify([...seen].sort())}`);
    expect(seen.get(202) ?? 0).toBeGreaterThan(0);
    expect(seen.get(400) ?? 0).toBeGreaterThan(0);
    expect(srv.output.join('\n')).not.toContain('"level":50');
  }, 150_000);

  it('answers the requests of the reports that once ended the process', async () => {
    for (const raw of [
      'GET /admin/bots/%FF HTTP/1.1\r\nHost: x\r\n\r\n',
      'DELETE /admin/tokens/%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n',
      'PATCH /admin/projects/% HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}',
    ]) {
      // 401, or 429 once the generated requests above spent this address's budget of admin failures.
      const status = await exchange(Buffer.from(raw, 'latin1'));
      expect([401, 429]).toContain(status);
      expect((await call(`${srv.url}/healthz`)).status).toBe(200);
    }
  });
});
