// The database goes away under load and comes back: 503 with Retry-After meanwhile (never a hang,
// never a 202 for rows not stored), recovery without a restart, retried events stored once.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/connect.js';
import { EmbeddedPostgres } from '../../src/db/embedded.js';
import { call, provision } from '../helpers/api.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { Traffic } from './traffic.js';

let dir: string;
let pg: EmbeddedPostgres;
let port: number;

/** The service's bound on a request that waits for the database, set for this test. */
const WRITE_TIMEOUT_MS = 3000;
/**
 * A request not answered within this is a hang: several times the write timeout, so a busy machine does not fail the
 * test.
 */
const HANG_MS = 5 * WRITE_TIMEOUT_MS;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-ingest-outage-'));
  pg = await EmbeddedPostgres.start({ dir });
  port = Number(new URL(pg.serviceUrl).port);
});
afterAll(async () => {
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('database outage', () => {
  it('answers 503 with Retry-After while PostgreSQL is down and recovers by itself', async () => {
    const srv: RunningServer = await startServer(pg.serviceUrl, {
      RATE_LIMIT_BURST: '1000000',
      WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
      WORKERS: '1',
    });
    let sql: Sql | null = null;
    try {
      const p = await provision(srv.url);
      // A request unanswered after HANG_MS is given up and counted as "timeout"; the test allows none.
      const traffic = new Traffic(() => srv.url, p.token, { clients: 4, eventsPerBatch: 20, timeoutMs: HANG_MS });
      traffic.start();
      await expect.poll(() => traffic.acked.size).toBeGreaterThan(0);

      await pg.stop();
      const downAt = Date.now();
      const statusesBefore = new Map(traffic.statuses);
      await new Promise((r) => setTimeout(r, 2500));
      // While it is down: every answer is a 503 with Retry-After, promptly.
      const during = await call(`${srv.url}/tg`, {
        method: 'POST',
        headers: { 'x-api-key': p.token },
        body: {
          events: [
            {
              eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
              eventName: 'n',
              eventDate: '2026-01-01T00:00:00Z',
              eventType: 'message',
              eventOrigin: 'custom',
              platformUserId: '1',
            },
          ],
        },
      });
      expect(during.status).toBe(503);
      expect(Number(during.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await call(`${srv.url}/readyz`)).status).toBe(503);
      expect((await call(`${srv.url}/healthz`)).status).toBe(200);
      // The clients' own requests meet the outage too: wait for their first 503 rather than assume a
      // time, bounded by HANG_MS since every request is answered within WRITE_TIMEOUT_MS.
      const refusedSince = () => (traffic.statuses.get('503') ?? 0) - (statusesBefore.get('503') ?? 0);
      while (refusedSince() === 0 && Date.now() - downAt < HANG_MS) await new Promise((r) => setTimeout(r, 100));
      const refused = refusedSince();
      expect(refused).toBeGreaterThan(0);

      pg = await EmbeddedPostgres.start({ dir, port });
      const upAt = Date.now();
      // Recovery without a restart: acknowledgements resume. The writer refuses for 500 ms after a failure and
      // reconnections back off at most 1 s; HANG_MS (15 s) only tells slow recovery from none.
      const ackedAtRestart = traffic.acked.size;
      while (traffic.acked.size === ackedAtRestart && Date.now() - upAt < HANG_MS)
        await new Promise((r) => setTimeout(r, 100));
      expect(
        traffic.acked.size,
        `no acknowledgement after the restart; statuses ${JSON.stringify([...traffic.statuses])}; last refusal ${traffic.lastRefusal}; server:\n${srv.output.slice(-15).join('\n')}`,
      ).toBeGreaterThan(ackedAtRestart);
      await traffic.stop();
      await traffic.retryPending().catch((err: Error) => {
        const pgLog = readFileSync(join(dir, 'postgres', 'server.log'), 'utf8')
          .split('\n')
          .filter((l) => /ERROR|FATAL|invalid|unexpected/.test(l))
          .slice(-20)
          .join('\n');
        throw new Error(`${err.message}; server:\n${srv.output.slice(-40).join('\n')}\nPostgreSQL:\n${pgLog}`);
      });

      sql = connect(pg.serviceUrl, { max: 1, name: 'test' });
      const rows = await sql<
        { event_id: string; n: number }[]
      >`SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
      const stored = new Map(rows.map((r) => [r.event_id, r.n]));
      expect([...traffic.acked].filter((id) => !stored.has(id))).toEqual([]);
      expect(rows.filter((r) => r.n > 1)).toEqual([]);
      expect(stored.size).toBe(traffic.sent.size);
      const [ledger] = await sql<
        { billed: string }[]
      >`SELECT events_billed AS billed FROM billing_usage WHERE project_id = ${p.projectId}`;
      expect(Number(ledger!.billed)).toBe(traffic.sent.size);
      expect(traffic.missingRetryAfter).toBe(0);
      // Losing and regaining the database is said in the log, once each.
      const said = () => srv.logs.map((l) => `${l.level} ${l.msg}`);
      // The watch asks every second; wait for its line up to 10 s rather than assume it has run.
      for (let i = 0; i < 100 && !said().some((l) => l.startsWith('30 database reachable again')); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(said().filter((l) => l.startsWith('50 database unreachable'))).toHaveLength(1);
      expect(said().filter((l) => l.startsWith('30 database reachable again'))).toHaveLength(1);
      // Never a hang: every request was answered, none given up after HANG_MS (5 × WRITE_TIMEOUT_MS; the
      // service answers within WRITE_TIMEOUT_MS, the rest is slack for a busy machine).
      expect(traffic.statuses.get('timeout') ?? 0).toBe(0);
      expect(traffic.maxLatencyMs).toBeLessThan(HANG_MS);
      console.log(
        `outage of ${upAt - downAt} ms: ${refused} requests answered 503, longest request ${Math.round(traffic.maxLatencyMs)} ms, ${traffic.acked.size} events stored once each`,
      );
    } finally {
      await sql?.end();
      await srv.stop();
    }
  }, 120_000);
});
