// The shipped load-balancer configuration (deploy/nginx.conf) in front of two real instances on one
// PostgreSQL: a token's rate limit holds as if there were one instance, the public surface is
// routed and /metrics is not, the client's address reaches the per-address limits unforged, the
// admin live view's WebSocket passes, and nginx's own refusals speak the service's JSON.
import { randomBytes } from 'node:crypto';
import { type IncomingHttpHeaders, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { freePort } from '../../src/db/embedded.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { checkNginxConf, NGINX_CONF, renderNginxConf, type RunningNginx, startNginx } from '../helpers/nginx.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

// A burst of 5 and a refill of one a minute: the sixth request of a token within the test is refused.
/** A key of the right shape that no instance issued. */
const madeUpToken = () => `tgk_${randomBytes(32).toString('base64url')}`;
const ENV = {
  TRUST_PROXY: '1',
  RATE_LIMIT_BURST: '5',
  RATE_LIMIT_PER_MIN: '1',
  AUTH_FAILURE_BURST: '2',
  AUTH_FAILURE_REFILL_PER_S: '0.001',
};

let db: TestDatabase;
let one: RunningServer;
let two: RunningServer;
let lb: RunningNginx;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  [one, two] = await Promise.all([startServer(db.url, ENV), startServer(db.url, ENV)]);
  lb = await startNginx([one.port, two.port]);
  p = await provision(lb.url);
});
afterAll(async () => {
  await lb?.stop();
  await Promise.all([one?.stop(), two?.stop()]);
  await db?.drop();
});

interface RawRes {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One request on a connection of its own, the path sent as written, optionally from another loopback address. */
function raw(
  path: string,
  o: {
    method?: string;
    headers?: Record<string, string | number>;
    body?: string | Buffer;
    localAddress?: string;
    endBody?: boolean;
  } = {},
): Promise<RawRes> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: lb.port,
        path,
        method: o.method ?? 'GET',
        headers: o.headers,
        localAddress: o.localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (o.endBody === false) {
      // Headers only: the answer comes before the body would.
      req.flushHeaders();
      return;
    }
    req.end(o.body);
  });
}

async function botApi202(srv: RunningServer): Promise<number> {
  const text = (await admin(srv.url, 'GET', '/metrics')).text;
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('tg_ingest_http_requests_total{') &&
        l.includes('endpoint="bot_api"') &&
        l.includes('status="202"'),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function createToken(): Promise<string> {
  const t = await admin(lb.url, 'POST', `/admin/bots/${p.botId}/tokens`);
  expect(t.status).toBe(201);
  return t.body.token as string;
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('deploy/nginx.conf', () => {
  it('passes nginx -t as shipped, and so does the copy the tests run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-nginx-t-'));
    try {
      // As root, the file itself (nginx -t binds port 80, opens the logs and creates the temporary
      // directories under /var/lib/nginx, as any start of nginx does). Otherwise, allowed none of
      // that, a copy with only the listen port and the paths of logs and temporary files changed.
      let conf = NGINX_CONF;
      if (process.getuid?.() !== 0) {
        conf = join(dir, 'nginx.conf');
        writeFileSync(
          conf,
          renderNginxConf(readFileSync(NGINX_CONF, 'utf8'), {
            instancePorts: [8081, 8082],
            listenPort: await freePort(),
            dir,
          }),
        );
      }
      const shipped = checkNginxConf(conf, dir);
      expect(shipped.output).not.toMatch(/\[(emerg|alert|crit|error)\]/);
      expect(shipped.ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(checkNginxConf(lb.conf, lb.dir).ok).toBe(true);
  });
});

describe('through nginx with two instances', () => {
  it('holds the per-token limit: five 202, then 429; another token has its own burst', async () => {
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await postBotApi(lb.url, p.token, { events: [serverEvent()] });
      statuses.push(r.status);
      remaining.push(r.headers.get('ratelimit-remaining'));
      if (i === 5) expect(r.body).toMatchObject({ error: 'rate_limited' });
    }
    expect(statuses).toEqual([202, 202, 202, 202, 202, 429]);
    expect(remaining).toEqual(['4', '3', '2', '1', '0', '0']);

    const second = await createToken();
    const r = await postBotApi(lb.url, second, { events: [serverEvent()] });
    expect(r.status).toBe(202);
    expect(r.headers.get('ratelimit-remaining')).toBe('4');

    // The bucket lives on one instance only: asked directly, the other still has a full one. Without
    // the hash the six requests would have been spread over two buckets, none of them refused.
    const direct = await Promise.all([one, two].map((s) => postBotApi(s.url, p.token, { events: [serverEvent()] })));
    expect(direct.map((d) => d.status).sort()).toEqual([202, 429]);
  });

  it('spreads tokens over both instances and keeps each on one', async () => {
    const before = await Promise.all([botApi202(one), botApi202(two)]);
    for (let i = 0; i < 16; i++) {
      const token = await createToken();
      const first = await postBotApi(lb.url, token, { events: [serverEvent()] });
      const again = await postBotApi(lb.url, token, { events: [serverEvent()] });
      expect([first.status, again.status]).toEqual([202, 202]);
      expect([first.headers.get('ratelimit-remaining'), again.headers.get('ratelimit-remaining')]).toEqual(['4', '3']);
    }
    const after = await Promise.all([botApi202(one), botApi202(two)]);
    const served = [after[0] - before[0], after[1] - before[1]];
    expect(served[0] + served[1]).toBe(32);
    // 16 random tokens all on one instance: a chance of 2 in 65536.
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
  });

  it('routes the public surface to the instances and keeps /metrics to them', async () => {
    expect((await call(`${lb.url}/healthz`)).body).toEqual({ status: 'ok' });
    expect(await call(`${lb.url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect((await call(`${lb.url}/openapi.json`)).body).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
    const sdk = await call(`${lb.url}/sdk/webapp.js`);
    expect([sdk.status, sdk.headers.get('access-control-allow-origin')]).toEqual([200, '*']);
    expect(sdk.text).toContain('tgIngest');
    expect((await admin(lb.url, 'GET', `/admin/projects/${p.projectId}`)).status).toBe(200);
    expect((await call(`${lb.url}/admin/`)).status).toBe(200);
    // The webapp endpoint answers as the service: a CORS preflight, and its own refusal of a bad body.
    const pre = await raw('/tg/webapp', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBeDefined();
    // (From an address of its own: a refused envelope counts against the sender's failure budget.)
    const bad = await raw('/messenger/webapp', {
      method: 'POST',
      localAddress: '127.0.0.4',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ botId: 'nope', auth: { initData: 'x' }, events: [serverEvent()] }),
    });
    expect([bad.status, JSON.parse(bad.text).error]).toEqual([400, 'bot_id_invalid']);
    // Each instance serves its metrics; the balancer serves them under no spelling of the path.
    expect((await admin(one.url, 'GET', '/metrics')).text).toContain('tg_ingest_http_requests_total');
    for (const path of [
      '/metrics',
      '/metrics?x=1',
      '//metrics',
      '/tg/../metrics',
      '/admin/../metrics',
      '/admin/..%2Fmetrics',
      '/%6Detrics',
      '/nope',
    ]) {
      const r = await raw(path);
      expect(r.status, path).toBe(404);
      expect(r.text, path).not.toContain('tg_ingest_');
    }
    expect(JSON.parse((await raw('/metrics')).text)).toEqual({ error: 'not_found', message: 'Not found.' });
  });

  it("takes bodies up to 32 MiB and refuses larger ones with the service's 413", async () => {
    // Exactly the limit reaches an instance, which refuses it for its missing key (not for its size).
    const atLimit = await raw('/tg', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(32 * 1024 * 1024, 0x20),
    });
    expect(atLimit.status).toBe(401);
    expect(JSON.parse(atLimit.text)).toMatchObject({ error: 'api_key_missing' });
    // One byte more is refused by nginx on the announced length, in the service's words.
    const over = await raw('/tg', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': 32 * 1024 * 1024 + 1, 'x-api-key': p.token },
      endBody: false,
    });
    expect(over.status).toBe(413);
    expect(over.headers['content-type']).toBe('application/json');
    expect(JSON.parse(over.text)).toEqual({ error: 'payload_too_large', message: 'The body exceeds the size limit.' });
  });

  it('answers 503 unavailable with Retry-After, the status clients retry, when no instance answers', async () => {
    const dead = await startNginx([await freePort(), await freePort()]);
    try {
      for (const path of ['/tg', '/tg/webapp']) {
        const r = await postBotApi(dead.url, p.token, { events: [serverEvent()] }, {}, path);
        expect(r.status, path).toBe(503);
        expect(r.headers.get('retry-after'), path).toBe('1');
        expect(r.body, path).toMatchObject({ error: 'unavailable' });
      }
    } finally {
      await dead.stop();
    }
  });

  it("passes on the client's address as nginx saw it, whatever X-Forwarded-For the client sent", async () => {
    // Unknown (well-formed) keys count as failures; AUTH_FAILURE_BURST=2 per address and instance. From
    // 127.0.0.2, five of them (two instances: one of them sees at least three) exhaust it, although
    // each request claims another address in its own X-Forwarded-For.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await raw('/tg', {
        method: 'POST',
        localAddress: '127.0.0.2',
        body: JSON.stringify({ events: [serverEvent()] }),
        headers: { 'content-type': 'application/json', 'x-api-key': madeUpToken(), 'x-forwarded-for': `10.1.2.${i}` },
      });
      statuses.push(r.status);
      if (r.status === 429) expect(JSON.parse(r.text)).toMatchObject({ error: 'auth_rate_limited' });
    }
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    // Another client address has a budget of its own on every instance: the instances see the
    // address nginx appended, not nginx's own.
    for (let i = 0; i < 2; i++) {
      const r = await raw('/tg', {
        method: 'POST',
        localAddress: '127.0.0.3',
        body: JSON.stringify({ events: [serverEvent()] }),
        headers: { 'content-type': 'application/json', 'x-api-key': madeUpToken() },
      });
      expect(r.status).toBe(401);
      expect(JSON.parse(r.text)).toMatchObject({ error: 'api_key_invalid' });
    }
  });

  it('upgrades /admin/live to a WebSocket on one instance, which shows its own events', async () => {
    const token = await createToken();
    const ws = new WebSocket(`${lb.url.replace('http', 'ws')}/admin/live?projectId=${p.projectId}`);
    const messages: Record<string, any>[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve());
      ws.on('error', reject);
    });
    try {
      ws.send(JSON.stringify({ token: ADMIN_TOKEN }));
      await until(() => messages.some((m) => m.type === 'ready'));
      // One event answered by each instance: the viewer sees the one of its instance only.
      const events = [serverEvent(), serverEvent()];
      const answers = await Promise.all([one, two].map((s, i) => postBotApi(s.url, token, { events: [events[i]] })));
      expect(
        answers.map((a) => a.status),
        JSON.stringify(answers.map((a) => a.body)),
      ).toEqual([202, 202]);
      await until(() => messages.some((m) => m.type !== 'ready'));
      await new Promise((r) => setTimeout(r, 300));
      const seen = messages.filter((m) => m.type !== 'ready').map((m) => m.eventId);
      expect(seen).toHaveLength(1);
      expect(events.map((e) => e.eventId)).toContain(seen[0]);
    } finally {
      ws.close();
    }
  });
});
