// The app in this process, started and shut down: every wing's jobs ran, and nothing they started is left behind (no
// timer, socket, worker or database connection). The build in dist/, as the service runs: its worker pool loads the
// compiled worker.
import { createHook } from 'node:async_hooks';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/app.js';
import { readConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/base/log.js';

const { startApp } = (await import(
  new URL('../../dist/src/app/app.js', import.meta.url).href
)) as typeof import('../../src/app/app.js');
import { serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const TOKEN = 'lifecycle-admin-token-0123456789';

/** One request on a connection of its own, closed with the answer: the client holds nothing afterwards. */
function send(port: number, method: string, path: string, body?: unknown, key?: string) {
  return new Promise<{ status: number; json: unknown }>((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          connection: 'close',
          authorization: `Bearer ${TOKEN}`,
          ...(key === undefined ? {} : { 'x-api-key': key }),
          ...(data === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, json: text === '' ? null : JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** The process's live resources by kind (timers, sockets, workers' ports…), counted. */
function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

/** What lasts until it is closed or fires: timers, sockets, listeners, workers, ports, histograms (not promises). */
const LASTING =
  /^(Timeout|Immediate|TCPWRAP|PIPEWRAP|TCPSERVERWRAP|PIPESERVERWRAP|WORKER|MESSAGEPORT|ELDHISTOGRAM|Piscina|SIGNALWRAP|PROCESSWRAP|FSEVENTWRAP|STATWATCHER)$/;

const settle = () => new Promise((r) => setTimeout(r, 300));

describe('the app, started and shut down in this process', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    // The process's own stdout and stderr are opened on first use (a worker's output goes to them): not the app's.
    void process.stdout;
    void process.stderr;

    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  for (const adminPort of ['0', null] as const) {
    it(`leaves nothing running${adminPort === null ? '' : ' with an admin listener of its own'}`, async () => {
      await settle();
      // This test's own connection, open before counting.
      await db.sql`SELECT 1`;
      const before = resources();
      // What the app creates from here to the end of its shutdown, until it is destroyed.
      const created = new Map<number, string>();
      let recording = true;
      const hook = createHook({
        init: (id, type) => void (recording && LASTING.test(type) && created.set(id, type)),
        destroy: (id) => void created.delete(id),
      }).enable();
      const config = readConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        ...(adminPort === null ? {} : { ADMIN_HOST: '127.0.0.1', ADMIN_PORT: adminPort }),
        WORKERS: '2',
        REPORTS_EVERY_MS: '100',
        LOG_LEVEL: 'silent',
      });
      const app: App = await startApp({
        config,
        databaseUrl: db.url,
        adminToken: TOKEN,
        log: createLogger('silent'),
      });
      const adminAt = app.adminPort ?? app.port;
      // Every wing at work: provisioning, ingestion through the pool and the writer, the reports' fold, an erasure.
      const project = await send(adminAt, 'POST', '/admin/projects', { name: 'lifecycle' });
      expect(project.status).toBe(201);
      const { projectId } = project.json as { projectId: string };
      const bot = await send(adminAt, 'POST', '/admin/bots', { projectId });
      const { botId } = bot.json as { botId: string };
      const token = await send(adminAt, 'POST', `/admin/bots/${botId}/tokens`);
      const { token: key } = token.json as { token: string };
      const stored = await send(app.port, 'POST', '/tg', { events: [serverEvent({ platformUserId: '42' })] }, key);
      expect(stored.status, JSON.stringify(stored.json)).toBe(202);
      expect((await send(adminAt, 'GET', '/openapi.json')).status).toBe(200);
      const erasure = await send(adminAt, 'POST', `/admin/projects/${projectId}/erasures`, { userIds: ['42'] });
      expect(erasure.status).toBe(202);
      const { erasureId } = erasure.json as { erasureId: string };
      for (let i = 0; i < 100; i++) {
        const e = await send(adminAt, 'GET', `/admin/projects/${projectId}/erasures/${erasureId}`);
        if ((e.json as { status: string }).status === 'done') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const [erased] = await db.sql<{ status: string; deleted_events: string }[]>`
        SELECT status, deleted_events::text FROM erasures WHERE erasure_id = ${erasureId}`;
      expect(erased).toEqual({ status: 'done', deleted_events: '1' });

      await app.shutdown();
      recording = false;
      await settle();
      hook.disable();
      // A histogram and the pool's resource are destroyed when collected; everything else must be closed or cleared.
      expect([...created.values()].filter((t) => t !== 'ELDHISTOGRAM' && t !== 'Piscina')).toEqual([]);
      expect(resources()).toEqual(before);
      await expect(send(app.port, 'GET', '/healthz')).rejects.toThrow(/ECONNREFUSED/);
      const [{ n }] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tg-ingest'`;
      expect(n).toBe(0);
    });
  }
});
