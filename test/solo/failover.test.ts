// The service on a Patroni cluster (deploy/patroni/: three PostgreSQL 15 nodes, synchronous mode, HAProxy in
// front), two instances under load from 32 clients that resend with the same event ids what got no 202. The primary
// goes away three ways: kill -9 of its Patroni and PostgreSQL, a planned switchover, and its network cut (a commit
// sent to it has an unknown fate: it must not be answered 202 unless it is found committed). Each time:
// every 202 is stored exactly once on the new primary, every other answer is a 503 with Retry-After (no 500, no
// request past the client's timeout), each instance acknowledges again within 10 s of the promotion without a
// restart, quota leases renew on the new primary, and the old primary rejoins as a standby.
// HA_ROUNDS=5 repeats the three.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/connect.js';
import { admin, provision } from '../helpers/api.js';
import { PatroniCluster, type PatroniNode } from '../helpers/patroni.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { Traffic } from '../faults/traffic.js';

const ROUNDS = Number(process.env.HA_ROUNDS ?? 1);
/** The bound on a write's wait for the database, for these instances. */
const WRITE_TIMEOUT_MS = 3000;
/** The clients give up on a request after this: an answer later than it is a hang. */
const CLIENT_TIMEOUT_MS = 15_000;
/** Each instance acknowledges again within this of the promotion. */
const READY_MS = 10_000;
/** A case that has not finished after this fails, with the cluster's logs. */
const CASE_MS = 240_000;

let cluster: PatroniCluster;
let sql: Sql;
const startedIn = process.cwd();
let rootOnly: string | null = null;

beforeAll(async () => {
  // Started from a directory only its owner may enter, as from a clone under /root: the programs that run as
  // PostgreSQL's user must not depend on the working directory they would inherit.
  rootOnly = mkdtempSync(join(tmpdir(), 'tg-ingest-root-only-'));
  chmodSync(rootOnly, 0o700);
  process.chdir(rootOnly);
  cluster = await PatroniCluster.start();
  const setup = connect(cluster.url(), { max: 1, name: 'ha-test' });
  await setup`CREATE DATABASE tg`;
  await setup.end();
  sql = connect(cluster.url('tg'), { max: 2, name: 'ha-test' });
}, 240_000);

afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await cluster?.stop();
  process.chdir(startedIn);
  if (rootOnly !== null) rmSync(rootOnly, { recursive: true, force: true });
});

type Fault = 'kill -9' | 'switchover' | 'network cut';

async function fault(kind: Fault, primary: PatroniNode): Promise<void> {
  if (kind === 'kill -9') await cluster.kill(primary);
  else if (kind === 'network cut') cluster.cutNetwork(primary);
  else {
    const members = await cluster.members();
    const sync = members.find((m) => m.role === 'sync_standby');
    const candidate = cluster.nodes.find((n) => n.name === sync?.name);
    if (candidate === undefined) throw new Error(`no synchronous standby: ${JSON.stringify(members)}`);
    await cluster.switchover(primary, candidate);
  }
}

describe('failover on a Patroni cluster under load', () => {
  const faults: Fault[] = ['kill -9', 'switchover', 'network cut'];
  const cases = Array.from({ length: ROUNDS }, (_, r) => faults.map((f) => [r + 1, f] as const)).flat();
  it.each(cases)(
    'round %i, %s of the primary: every 202 stored once, only 503s meanwhile, both instances back within 10 s',
    async (_round, kind) => {
      const env = {
        RATE_LIMIT_BURST: '1000000',
        RATE_LIMIT_PER_MIN: '100000000',
        WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
        WORKERS: '1',
        LOG_LEVEL: 'warn',
      };
      await cluster.awaitHealthy().catch((err: Error) => {
        throw new Error(`${err.message}\n${cluster.logTail()}`);
      });
      const instances: RunningServer[] = [await startServer(cluster.url('tg'), env)];
      // Whatever a failed case leaves behind is undone in `finally`: clients stopped, the old primary back.
      let traffic: Traffic[] = [];
      let old: PatroniNode | null = null;
      let restored = false;
      // Past this the case fails with the cluster's logs rather than at vitest's timeout with none.
      let deadline: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        deadline = setTimeout(() => reject(new Error(`the case outlasted ${CASE_MS} ms`)), CASE_MS);
      });
      expired.catch(() => undefined);
      const bounded = <T>(p: Promise<T>): Promise<T> => Promise.race([p, expired]);
      const t0 = performance.now();
      const step = (what: string) => {
        if (process.env.HA_TRACE) console.log(`${Math.round(performance.now() - t0)} ms: ${what}`);
      };
      try {
        instances.push(await startServer(cluster.url('tg'), env));
        const p = await bounded(provision(instances[0]!.url));
        // A monthly allowance: the instances bill through quota leases, which must renew on the new primary.
        expect(
          (
            await bounded(
              admin(instances[0]!.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 100_000_000 }),
            )
          ).status,
        ).toBe(200);
        traffic = instances.map(
          (s) => new Traffic(() => s.url, p.token, { clients: 16, eventsPerBatch: 20, timeoutMs: CLIENT_TIMEOUT_MS }),
        );
        for (const t of traffic) t.start();
        await new Promise((r) => setTimeout(r, 2000));
        for (const t of traffic) expect(t.acked.size).toBeGreaterThan(0);

        old = await cluster.primary();
        expect(old).not.toBeNull();
        const faultAt = performance.now();
        await bounded(fault(kind, old!));
        step(`${kind} of ${old!.name}`);
        const promoted = await bounded(cluster.awaitPromotion(old!));
        step(`${promoted.node.name} promoted`);
        const promotedWall = Date.now();
        // Each instance acknowledges again (its own clients' requests, through HAProxy to the new primary).
        const backAfter = await Promise.all(
          traffic.map(async (t) => {
            for (;;) {
              const first = t.ackedAt.find((at) => at > promoted.at);
              if (first !== undefined) return first - promoted.at;
              if (performance.now() - promoted.at > 3 * READY_MS) return Number.POSITIVE_INFINITY;
              await new Promise((r) => setTimeout(r, 50));
            }
          }),
        );
        step(`acknowledging again after ${backAfter.map(Math.round).join(', ')} ms`);
        // Long enough for each instance to renew its lease (every 2 × AUTH_CACHE_TTL_MS, 4 s) on the new primary.
        await new Promise((r) => setTimeout(r, 5000));
        for (const t of traffic) await bounded(t.stop());
        step('traffic stopped');
        for (const t of traffic) await bounded(t.retryPending(30_000));
        step('pending batches acknowledged');
        console.log(
          `${kind}: promoted ${Math.round(promoted.at - faultAt)} ms after the fault; instances acknowledging again ${backAfter.map((ms) => `${Math.round(ms)} ms`).join(', ')} after it; answers ${traffic.map((t) => JSON.stringify(Object.fromEntries(t.statuses))).join(' ')}`,
        );

        const sent = new Set(traffic.flatMap((t) => [...t.sent]));
        const acked = traffic.flatMap((t) => [...t.acked]);
        const rows = await bounded(sql<{ event_id: string; n: number }[]>`
          SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`);
        const stored = new Map(rows.map((r) => [r.event_id, r.n]));
        expect(acked.filter((id) => !stored.has(id))).toEqual([]);
        expect(rows.filter((r) => r.n > 1)).toEqual([]);
        expect(stored.size).toBe(sent.size);
        // Billing followed the rows across the failover: each stored event billed once.
        const [ledger] = await bounded(sql<{ billed: string }[]>`
          SELECT coalesce(sum(events_billed), 0)::text AS billed FROM billing_ledger WHERE project_id = ${p.projectId}`);
        expect(Number(ledger!.billed)).toBe(sent.size);
        step('rows and ledger checked');
        // Only 202 and 503 (with Retry-After): no 500, no request past the clients' timeout, no refused connection.
        for (const t of traffic) {
          expect([...t.statuses.keys()].filter((k) => k !== '202' && k !== '503')).toEqual([]);
          expect(t.missingRetryAfter).toBe(0);
        }
        for (const ms of backAfter) expect(ms).toBeLessThan(READY_MS);
        // Quota leases renewed on the new primary, by both instances: a lease holds until its grant + 4 s + the
        // write timeout + 5 s, so one holding past the promotion + 12 s was granted after it.
        const [leases] = await bounded(sql<{ n: number }[]>`
          SELECT count(DISTINCT instance_id)::int AS n FROM quota_leases
          WHERE project_id = ${p.projectId} AND hold_until > ${new Date(promotedWall + 4000 + WRITE_TIMEOUT_MS + 5000)}`);
        expect(leases!.n).toBe(2);
        for (const s of instances) expect(s.proc.exitCode).toBeNull();
        step('leases checked');

        // The old primary rejoins as a standby: a killed node once restarted, a cut one once its network is back, a
        // switched-over one by itself.
        if (kind === 'kill -9') cluster.startNode(old!);
        if (kind === 'network cut') cluster.healNetwork(old!);
        restored = true;
        await bounded(cluster.waitReplica(old!, 120_000));
        step(`${old!.name} streams as a standby`);
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${cluster.logTail()}`);
      } finally {
        clearTimeout(deadline);
        for (const t of traffic) await Promise.race([t.stop(), new Promise((r) => setTimeout(r, CLIENT_TIMEOUT_MS))]);
        if (old !== null && !restored) {
          if (kind === 'kill -9' && old.proc === null) cluster.startNode(old);
          if (kind === 'network cut') cluster.healNetwork(old);
        }
        // SIGTERM ends an instance within SHUTDOWN_TIMEOUT_MS (30 s); one still running later is a failure of its own.
        const hung: number[] = [];
        for (const [i, s] of instances.entries()) {
          const stopped = await Promise.race([
            s.stop().then(() => true),
            new Promise<false>((r) => setTimeout(() => r(false), 45_000)),
          ]);
          if (!stopped) {
            hung.push(i);
            await s.kill();
          }
        }
        step('instances stopped');
        expect(hung, 'instances that did not stop within 45 s of SIGTERM').toEqual([]);
      }
    },
    300_000,
  );
});
