// kill -9 under load, restart, retry what was not acknowledged: every 202 is stored exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provision } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { Traffic } from './traffic.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const env = { RATE_LIMIT_BURST: '1000000', WORKERS: '1' };

describe('crash under load', () => {
  it.each([150, 600, 1200])(
    'kill -9 after %i ms loses no acknowledged event and stores none twice',
    async (killAfterMs) => {
      let srv: RunningServer = await startServer(db.url, env);
      const p = await provision(srv.url);
      const traffic = new Traffic(() => srv.url, p.token, { clients: 6, eventsPerBatch: 25, timeoutMs: 5000 });
      traffic.start();
      await new Promise((r) => setTimeout(r, killAfterMs));
      const inflight = traffic.inflight;
      const ackedBeforeKill = traffic.acked.size;
      await srv.kill();
      srv = await startServer(db.url, env);
      await new Promise((r) => setTimeout(r, 400));
      await traffic.stop();
      await traffic.retryPending();
      await srv.stop();

      const ids = [...traffic.sent];
      const rows = await db.sql<{ event_id: string; n: number }[]>`
      SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
      const stored = new Map(rows.map((r) => [r.event_id, r.n]));
      const lost = [...traffic.acked].filter((id) => !stored.has(id));
      const twice = rows.filter((r) => r.n > 1);
      console.log(
        `kill after ${killAfterMs} ms: ${inflight} requests in flight, ${ackedBeforeKill} events acknowledged before the kill, ${traffic.acked.size} in all, ${lost.length} lost`,
      );
      expect(lost).toEqual([]);
      expect(twice).toEqual([]);
      expect(traffic.acked.size).toBe(ids.length);
      expect(stored.size).toBe(ids.length);
      // A retry never double-counts: the ledger bills each stored event once.
      const [ledger] = await db.sql<
        { billed: string; stored: string }[]
      >`SELECT events_billed AS billed, events_stored AS stored FROM billing_usage WHERE project_id = ${p.projectId}`;
      expect(Number(ledger!.billed)).toBe(ids.length);
      expect(Number(ledger!.stored)).toBe(ids.length);
    },
    60_000,
  );
});
