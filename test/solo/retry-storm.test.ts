// No retry storm after an outage: 200 clients of @tg-ingest/client send steadily, PostgreSQL stops for 30 s and
// starts again. Meanwhile the clients wait as Retry-After asks, spread by their jitter; nothing acknowledged is lost;
// within 10 s of the database's return the service acknowledges at least 0.9× its steady rate again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BotApiEventInput, createClient, type IngestClient } from '../../client/src/index.js';
import { connect } from '../../src/db/connect.js';
import { EmbeddedPostgres } from '../../src/db/embedded.js';
import { provision } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const CLIENTS = 200;
/** Each client tracks one event every TICK_MS: 4,000 events a second in all. */
const TICK_MS = 50;
const OUTAGE_MS = 30_000;
const BACK_WITHIN_MS = 10_000;

let dir: string;
let pg: EmbeddedPostgres;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-ingest-storm-'));
  pg = await EmbeddedPostgres.start({ dir });
});
afterAll(async () => {
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Events acknowledged per second, in buckets of a second from `from`. */
function perSecond(acks: { at: number; n: number }[], from: number, seconds: number): number[] {
  const buckets = Array.from({ length: seconds }, () => 0);
  for (const a of acks) {
    const i = Math.floor((a.at - from) / 1000);
    if (i >= 0 && i < seconds) buckets[i]! += a.n;
  }
  return buckets;
}

describe('after a 30-s database outage', () => {
  it('200 clients back off as asked, lose nothing acknowledged, and goodput is back within 10 s', async () => {
    const port = Number(new URL(pg.serviceUrl).port);
    const srv = await startServer(pg.serviceUrl, {
      RATE_LIMIT_BURST: '1000000',
      RATE_LIMIT_PER_MIN: '100000000',
      WRITE_TIMEOUT_MS: '3000',
      LOG_LEVEL: 'warn',
    });
    let clients: IngestClient<BotApiEventInput>[] = [];
    let closed = false;
    try {
      const p = await provision(srv.url);
      const acks: { at: number; n: number }[] = [];
      const attempts: number[] = [];
      const acked = new Set<string>();
      const retryAfter = new Map<string, number>();
      // The clients' own fetch, watched: every attempt, and the events of every 202.
      const watched: typeof fetch = async (url, init) => {
        attempts.push(performance.now());
        const res = await fetch(url, init);
        const ra = res.headers.get('retry-after');
        if (ra !== null) retryAfter.set(ra, (retryAfter.get(ra) ?? 0) + 1);
        if (res.status === 202) {
          const body = JSON.parse(new TextDecoder().decode(init!.body as Uint8Array)) as {
            events: { eventId: string }[];
          };
          for (const e of body.events) acked.add(e.eventId);
          acks.push({ at: performance.now(), n: body.events.length });
        }
        return res;
      };
      clients = Array.from({ length: CLIENTS }, () =>
        createClient({
          baseUrl: srv.url,
          apiKey: p.token,
          flushIntervalMs: 100,
          maxBatchEvents: 100,
          // A 30-s outage outlasts the default 8 retries; an application that must not drop events sets more.
          maxRetries: 1000,
          gzipMinBytes: 1e9,
          fetch: watched,
        }),
      );
      let user = 0;
      const ticker = setInterval(() => {
        for (const c of clients)
          c.track({
            eventName: 'tick',
            eventType: 'interaction',
            eventOrigin: 'custom',
            platformUserId: String(1 + (user++ % 100_000)),
          });
      }, TICK_MS);
      try {
        await new Promise((r) => setTimeout(r, 3000));
        const steadyFrom = performance.now();
        await new Promise((r) => setTimeout(r, 5000));
        const steady = perSecond(acks, steadyFrom, 5).reduce((a, b) => a + b, 0) / 5;

        await pg.stop();
        const downAt = performance.now();
        await new Promise((r) => setTimeout(r, OUTAGE_MS));
        pg = await EmbeddedPostgres.start({ dir, port });
        const upAt = performance.now();
        await new Promise((r) => setTimeout(r, BACK_WITHIN_MS + 2000));

        const after = perSecond(acks, upAt, 12);
        const backAt = after.findIndex((n) => n >= 0.9 * steady);
        // During the outage (past its first 3 s, when requests already in flight settle): attempts per second.
        const during = perSecond(
          attempts.map((at) => ({ at, n: 1 })),
          downAt + 3000,
          Math.floor(OUTAGE_MS / 1000) - 3,
        );
        console.log(
          `steady ${Math.round(steady)} events/s; during the outage ${Math.min(...during)}–${Math.max(...during)} attempts/s (Retry-After ${JSON.stringify(Object.fromEntries(retryAfter))}); after it ${after.join(', ')} events/s by second`,
        );
        // Back to 0.9× the steady goodput within 10 s of the database's return.
        expect(backAt).toBeGreaterThanOrEqual(0);
        expect(backAt + 1).toBeLessThanOrEqual(BACK_WITHIN_MS / 1000);
        // No storm: each client waits a Retry-After of at least a second between attempts, with at most two requests
        // in flight, so no second of the outage sees more than 2 × 200 attempts.
        expect(Math.max(...during)).toBeLessThanOrEqual(2 * CLIENTS);
      } finally {
        clearInterval(ticker);
      }
      const reports = await Promise.all(clients.map((c) => c.close()));
      closed = true;
      expect(reports.reduce((n, r) => n + r.failed, 0)).toBe(0);

      const sql = connect(pg.serviceUrl, { max: 1, name: 'test' });
      try {
        const rows = await sql<{ event_id: string; n: number }[]>`
          SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
        const stored = new Map(rows.map((r) => [r.event_id, r.n]));
        expect([...acked].filter((id) => !stored.has(id))).toEqual([]);
        expect(rows.filter((r) => r.n > 1)).toEqual([]);
      } finally {
        await sql.end();
      }
    } finally {
      // A failed assertion must not leave 200 clients retrying: the process would not end.
      if (!closed) for (const c of clients) void c.close().catch(() => undefined);
      await srv.stop();
    }
    // About 55 s of it are the scenario's own (3 + 5 + 30 + 12 s); the rest is room for a slow teardown on a busy machine.
  }, 180_000);
});
