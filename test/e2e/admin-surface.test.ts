// The operator's surface: /admin and /metrics on a listener of their own when ADMIN_PORT is set,
// admin authentication failures limited per client address, nosniff on every response.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let adminUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const adminPort = await freePort();
  srv = await startServer(db.url, { ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(adminPort) });
  adminUrl = `http://127.0.0.1:${adminPort}`;
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

describe('ADMIN_HOST / ADMIN_PORT', () => {
  it('serves /admin and /metrics only on the admin listener', async () => {
    for (const path of ['/admin', '/admin/', '/admin/projects', '/admin/page/admin.js', '/metrics']) {
      const main = await call(`${srv.url}${path}`, { headers: auth });
      expect([path, main.status, main.body?.error]).toEqual([path, 404, 'not_found']);
    }
    expect((await call(`${adminUrl}/admin/`)).status).toBe(200);
    expect((await call(`${adminUrl}/admin/projects`, { headers: auth })).status).toBe(200);
    expect((await call(`${adminUrl}/metrics`)).text).toContain('tg_ingest_http_requests_total');
    // Ingestion stays on the main listener only.
    const p = await provision(adminUrl);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    expect((await postBotApi(adminUrl, p.token, { events: [serverEvent()] })).status).toBe(404);
    for (const base of [srv.url, adminUrl]) expect((await call(`${base}/healthz`)).status).toBe(200);
  });
});

describe('admin authentication failures', () => {
  it('are limited per client address: 401 twenty times in a minute, then 429; the right token is always served', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const headers: Record<string, string> = i % 2 === 0 ? { authorization: 'Bearer wrong-token-of-some-length' } : {};
      statuses.push((await call(`${adminUrl}/admin/projects`, { headers })).status);
    }
    expect(statuses).toEqual([...Array(20).fill(401), 429, 429]);
    const limited = await call(`${adminUrl}/admin/projects`);
    expect(limited.body.error).toBe('auth_rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await call(`${adminUrl}/admin/projects`, { headers: auth })).status).toBe(200);
  });
});

describe('headers', () => {
  it('every response says X-Content-Type-Options: nosniff', async () => {
    const p = await provision(adminUrl);
    const answers = [
      await postBotApi(srv.url, p.token, { events: [serverEvent()] }),
      await postBotApi(srv.url, null, { events: [serverEvent()] }),
      await call(`${srv.url}/nowhere`),
      await call(`${srv.url}/tg`, { method: 'GET' }),
      await call(`${srv.url}/tg/webapp`, { method: 'OPTIONS' }),
      await call(`${srv.url}/openapi.json`),
      await call(`${adminUrl}/metrics`),
      await call(`${adminUrl}/admin/page/admin.css`),
    ];
    expect(answers.map((a) => a.headers.get('x-content-type-options'))).toEqual(Array(answers.length).fill('nosniff'));
  });
});
