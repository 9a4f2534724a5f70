// SIGTERM under load: in-flight requests are answered, none of their acknowledged events is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provision } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startServer } from '../helpers/server.js';
import { Traffic } from './traffic.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('graceful shutdown', () => {
  it('answers what is in flight, commits it, and exits 0', async () => {
    const srv = await startServer(db.url, { RATE_LIMIT_BURST: '1000000', WORKERS: '1', BATCH_MAX_WAIT_MS: '20' });
    const p = await provision(srv.url);
    const traffic = new Traffic(() => srv.url, p.token, { clients: 6, eventsPerBatch: 50, timeoutMs: 10_000 });
    traffic.start();
    await new Promise((r) => setTimeout(r, 700));
    const inflight = traffic.inflight;
    const code = await srv.stop('SIGTERM');
    await traffic.stop();
    expect(code).toBe(0);
    expect(srv.logs.some((l) => l.msg === 'stopped')).toBe(true);

    const rows = await db.sql<{ event_id: string }[]>`SELECT event_id FROM events WHERE project_id = ${p.projectId}`;
    const stored = new Set(rows.map((r) => r.event_id));
    const lost = [...traffic.acked].filter((id) => !stored.has(id));
    console.log(
      `SIGTERM with ${inflight} requests in flight: ${traffic.acked.size} events acknowledged, ${lost.length} lost; answers ${JSON.stringify([...traffic.statuses])}`,
    );
    expect(lost).toEqual([]);
    // Requests that reached the server before it stopped were answered: only refused connections remain.
    expect(traffic.statuses.get('timeout') ?? 0).toBe(0);
  }, 30_000);
});
