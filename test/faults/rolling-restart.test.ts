// A rolling restart behind the shipped deploy/nginx.conf, under load: clients that never retry see
// only 202s (nginx sends what a stopping or stopped instance refuses to the other one), and every
// acknowledged event is stored exactly once and billed once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningNginx, startNginx } from '../helpers/nginx.js';
import { NO_SHEDDING, type RunningServer, startServer } from '../helpers/server.js';

const ENV = { TRUST_PROXY: '1', RATE_LIMIT_BURST: '1000000', ...NO_SHEDDING };

let db: TestDatabase;
let ports: number[];
let servers: RunningServer[];
let lb: RunningNginx;

beforeAll(async () => {
  db = await createTestDatabase();
  ports = [await freePort(), await freePort()];
  // A fixed port each, so an instance can be started again where nginx expects it.
  servers = await Promise.all(ports.map((port) => startServer(db.url, { ...ENV, PORT: String(port) })));
  lb = await startNginx(ports);
});
afterAll(async () => {
  await lb?.stop();
  await Promise.all((servers ?? []).map((s) => s.stop()));
  await db?.drop();
});

/** Clients sending batches through nginx back to back. Any answer but 202 is a failure: no retries. */
class Clients {
  readonly sent = new Set<string>();
  readonly acked = new Set<string>();
  readonly failures: string[] = [];
  requests = 0;
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly url: string,
    private readonly tokens: string[],
    private readonly eventsPerBatch: number,
  ) {}

  start(perToken: number): void {
    this.running = true;
    this.loops = this.tokens.flatMap((token) =>
      Array.from({ length: perToken }, async () => {
        while (this.running) {
          const events = Array.from({ length: this.eventsPerBatch }, () => serverEvent());
          for (const e of events) this.sent.add(e.eventId as string);
          this.requests++;
          try {
            const res = await fetch(`${this.url}/tg`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': token },
              body: JSON.stringify({ events }),
              signal: AbortSignal.timeout(30_000),
            });
            const text = await res.text();
            if (res.status === 202) for (const e of events) this.acked.add(e.eventId as string);
            else this.failures.push(`${res.status} ${text}`);
          } catch (err) {
            this.failures.push(`no answer: ${(err as Error).message}`);
          }
        }
      }),
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
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

async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Tokens of one bot, at least `each` of them served by each instance (found by asking nginx once per token). */
async function tokensOnBothInstances(p: Provisioned, each: number): Promise<{ tokens: string[]; probe: string[] }> {
  const byInstance: string[][] = [[], []];
  const probe: string[] = [];
  for (let i = 0; i < 40 && (byInstance[0]!.length < each || byInstance[1]!.length < each); i++) {
    const t = await admin(lb.url, 'POST', `/admin/bots/${p.botId}/tokens`);
    expect(t.status).toBe(201);
    const before = await botApi202(servers[0]!);
    const e = serverEvent();
    expect((await postBotApi(lb.url, t.body.token, { events: [e] })).status).toBe(202);
    probe.push(e.eventId);
    byInstance[(await botApi202(servers[0]!)) > before ? 0 : 1]!.push(t.body.token);
  }
  expect(byInstance.map((b) => b.length >= each)).toEqual([true, true]);
  return { tokens: [...byInstance[0]!.slice(0, each), ...byInstance[1]!.slice(0, each)], probe };
}

describe('a rolling restart behind nginx', () => {
  it('gives clients only 202s under load and stores every acknowledged event exactly once', {
    timeout: 90_000,
  }, async () => {
    const p = await provision(lb.url);
    const { tokens, probe } = await tokensOnBothInstances(p, 2);
    const clients = new Clients(lb.url, tokens, 10);
    clients.start(2);
    const log: string[] = [];
    try {
      await sleep(700);
      for (const i of [0, 1]) {
        const atStop = clients.requests;
        // SIGTERM: the instance stops listening, finishes what is in flight, answers new requests
        // on kept-alive connections 503 shutting_down, commits and exits.
        expect(await servers[i]!.stop('SIGTERM')).toBe(0);
        const down = Date.now();
        servers[i] = await startServer(db.url, { ...ENV, PORT: String(ports[i]) });
        await until(async () => (await call(`${servers[i]!.url}/readyz`)).status === 200, `instance ${i + 1} ready`);
        log.push(
          `instance ${i + 1}: down for ${Date.now() - down} ms, ${clients.requests - atStop} requests meanwhile`,
        );
        // Its tokens come back to it as soon as it answers (max_fails=0: nothing keeps it out).
        await until(async () => (await botApi202(servers[i]!)) > 0, `traffic back on instance ${i + 1}`, 5000);
        await sleep(500);
      }
    } finally {
      await clients.stop();
    }

    // The access log (flushed when nginx stops) shows the requests nginx sent to a second instance.
    await lb.stop();
    const lines = lb
      .accessLog()
      .split('\n')
      .filter((l) => l.includes('"POST /tg '));
    const retried = lines.filter((l) => /upstream_status="[^"]*,/.test(l));
    const retried503 = retried.filter((l) => /upstream_status="503,/.test(l));
    console.log(
      `${log.join('; ')}; ${clients.requests} requests, ${clients.acked.size} events acknowledged; ${retried.length} requests retried on the other instance (${retried503.length} after a 503)`,
    );

    expect(clients.failures.slice(0, 5)).toEqual([]);
    expect(clients.acked.size).toBe(clients.sent.size);
    expect(retried.length).toBeGreaterThan(0);
    for (const l of retried) expect(l).toMatch(/" 202 /);

    const acked = new Set([...clients.acked, ...probe]);
    const rows = await db.sql<{ event_id: string; n: number }[]>`
      SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
    expect(rows.filter((r) => r.n > 1)).toEqual([]);
    expect(rows.filter((r) => !acked.has(r.event_id))).toEqual([]);
    expect(rows.length).toBe(acked.size);
    const [ledger] = await db.sql<
      { billed: string; stored: string }[]
    >`SELECT events_billed AS billed, events_stored AS stored FROM billing_usage WHERE project_id = ${p.projectId}`;
    expect(Number(ledger!.billed)).toBe(acked.size);
    expect(Number(ledger!.stored)).toBe(acked.size);
  });
});
