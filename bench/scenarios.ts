// The scenarios of `make bench`. Each drives the real service (its own process) over HTTP with
// autocannon, except `ceiling`, which is PostgreSQL alone: the same rows COPied straight into the
// same table by this process, the yardstick every service figure is divided by.
import { processBotApiBatch } from '../src/pipeline/batch.js';
import { COPY_EVENTS } from '../src/writer/statements.js';
import { WireConnection } from '../src/writer/wire.js';
import { WebSocket } from 'ws';
import {
  adminCall,
  ADMIN_TOKEN,
  type Database,
  provision,
  scrape,
  type Service,
  startService,
  tableRows,
} from './lib/env.js';
import { load, type LoadResult } from './lib/load.js';
import { event, runTail, serverBatch, slotsIn, stamp, template } from './lib/payloads.js';
import { cpuWindow, peakRssMiB } from './lib/proc.js';
import { makeInitData, newSigner } from './lib/initdata.js';

export interface Figures {
  name: string;
  requestsPerS: number;
  eventsPerS: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  rowsPerCommit: number;
  commitMs: number;
  serverCores: number;
  mainThreadCores: number;
  /** Seconds per second the service's main thread waited for a core (runnable, not running). */
  mainThreadWaitCores: number;
  postgresCores: number;
  loadGeneratorCores: number;
  machineCores: number;
  peakRssMiB: number;
  tableRowsBefore: number;
  tableRowsAfter: number;
  /** Answers of the measured window, by status. */
  statuses: Record<string, number>;
  /** Requests the service shed at the door (503 before reading), warm-up included: which 503s were shedding's. */
  shedAtDoor: number;
  extra?: Record<string, number | string>;
}

export interface RunOptions {
  durationS: number;
  warmupS: number;
}

async function measure(
  name: string,
  db: Database,
  svc: Service,
  events: number,
  o: RunOptions,
  driver: (durationS: number) => Promise<LoadResult>,
): Promise<Figures> {
  // Every scenario starts clean: the previous one's dirty pages are written now, not by a
  // checkpoint during this one's window.
  await db.sql`CHECKPOINT`;
  await driver(o.warmupS);
  const before = await tableRows(db.sql);
  const cpu = cpuWindow(svc.pid);
  const r = await driver(o.durationS);
  const used = cpu.stop();
  const after = await tableRows(db.sql);
  const m = await scrape(svc.url);
  const commits =
    (m.get('tg_ingest_commit_rows_count{path="copy"}') ?? 0) +
    (m.get('tg_ingest_commit_rows_count{path="staging"}') ?? 0);
  const committed =
    (m.get('tg_ingest_commit_rows_sum{path="copy"}') ?? 0) + (m.get('tg_ingest_commit_rows_sum{path="staging"}') ?? 0);
  const commitSeconds =
    (m.get('tg_ingest_commit_duration_seconds_sum{path="copy"}') ?? 0) +
    (m.get('tg_ingest_commit_duration_seconds_sum{path="staging"}') ?? 0);
  return {
    commitMs: (commitSeconds * 1000) / Math.max(1, commits),
    rowsPerCommit: committed / Math.max(1, commits),
    name,
    requestsPerS: r.rps,
    eventsPerS: r.rps * events,
    p50Ms: r.p50,
    p99Ms: r.p99,
    failed: r.non2xx + r.errors + r.timeouts,
    serverCores: used.serverCores,
    mainThreadCores: used.mainThreadCores,
    mainThreadWaitCores: used.mainThreadWaitCores,
    postgresCores: used.postgresCores,
    loadGeneratorCores: used.loadGeneratorCores,
    machineCores: used.machineCores,
    peakRssMiB: peakRssMiB(svc.pid),
    tableRowsBefore: before,
    tableRowsAfter: after,
    statuses: r.statuses,
    shedAtDoor: m.get('tg_ingest_shed_requests_total') ?? 0,
  };
}

/**
 * bot_api with `events`-event batches; `users`: 'churn', every event's user drawn from a million, one users[] profile
 * per request; 'sessions', each event from one of the sessions under way (below).
 */
export async function botApiScenario(
  name: string,
  db: Database,
  o: RunOptions & {
    events: number;
    connections: number;
    env?: Record<string, string>;
    scrapeEveryMs?: number;
    users?: 'churn' | 'sessions';
    /** A tracking plan to put in force first. */
    plan?: Record<string, unknown>;
    /** Every n-th event invalid (quarantined). */
    invalidEvery?: number;
    /** One live viewer watching the project throughout. */
    viewer?: boolean;
    /** Runs once the project exists, before the warm-up (b-large-50m preloads its table). */
    prepare?: (ids: { projectId: string; botId: string }) => Promise<void>;
    /** Runs after the measured window, while the service still runs; what it returns joins the row. */
    finish?: (ids: { projectId: string; botId: string }) => Promise<Record<string, number | string>>;
    /** Milliseconds from a probe event's 202 to the daily report counting it, pushed here throughout the run. */
    freshness?: number[];
  },
): Promise<Figures> {
  const svc = await startService(db.url, o.env);
  // A Prometheus-like scraper polling /metrics throughout, to show what counting costs.
  let scraping = o.scrapeEveryMs !== undefined;
  const scraper = (async () => {
    while (scraping) {
      await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        .then((r) => r.text())
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, o.scrapeEveryMs));
    }
  })();
  try {
    // A database that served a scenario before (erasure-50m after b-large-50m) has its bot: a messenger id of its own.
    const [{ bots }] = await db.sql<{ bots: number }[]>`SELECT count(*)::int AS bots FROM bots`;
    const { token, projectId, botId } = await provision(svc.url, 8000001 + bots!);
    if (o.prepare !== undefined) await o.prepare({ projectId, botId });
    if (o.plan !== undefined) await adminCall(svc.url, 'PUT', `/admin/projects/${projectId}/tracking-plan`, o.plan);
    const viewer = o.viewer ? await watch(svc.url, projectId) : null;
    const tail = runTail();
    // Several templates, so consecutive requests differ in users and names as real traffic does.
    const templates = Array.from({ length: 8 }, (_, k) =>
      serverBatch(
        o.events,
        { tail, users: 20_000, ...(o.invalidEvery === undefined ? {} : { invalidEvery: o.invalidEvery }) },
        k * o.events,
      ),
    );
    let counter = 0;
    const body =
      o.users === 'churn'
        ? churnBody(templates)
        : o.users === 'sessions'
          ? sessionsBody(templates)
          : () => stamp(templates[counter % templates.length]!, counter++);
    const headers = { 'content-type': 'application/json', 'x-api-key': token };
    const probe = o.freshness === undefined ? null : freshnessProbe(svc.url, headers, projectId, o.freshness);
    const f = await measure(name, db, svc, o.events, o, (durationS) =>
      load({ url: `${svc.url}/tg`, headers, connections: o.connections, durationS, body }),
    ).finally(() => probe?.stop());
    if (viewer !== null) {
      f.extra = { 'live messages': viewer.messages(), 'live skipped': viewer.skipped() };
      viewer.close();
    }
    if (o.users !== undefined) {
      const [{ users, events }] = await db.sql<{ users: number; events: number }[]>`
        SELECT (SELECT count(*) FROM users)::float8 AS users, (SELECT count(*) FROM events)::float8 AS events`;
      f.extra = { ...f.extra, 'new users per event': users! / events! };
    }
    if (o.invalidEvery !== undefined) {
      const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM quarantine`;
      f.extra = { ...f.extra, quarantined: n };
    }
    if (o.finish !== undefined) f.extra = { ...f.extra, ...(await o.finish({ projectId, botId })) };
    return f;
  } finally {
    scraping = false;
    await scraper;
    await svc.stop();
  }
}

/**
 * How soon the reports count what was stored, under the load beside: one event a second, each on a day of its own
 * (from 2001-01-01 on), and the daily report asked every 50 ms until it counts it; the time from the 202 is pushed.
 */
function freshnessProbe(
  base: string,
  headers: Record<string, string>,
  projectId: string,
  into: number[],
): { stop(): Promise<void> } {
  let running = true;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const done = (async () => {
    for (let n = 0; running; n++) {
      const day = new Date(Date.UTC(2001, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);
      const sent = await fetch(`${base}/tg`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          events: [
            {
              eventId: crypto.randomUUID(),
              eventName: 'freshness_probe',
              eventType: 'message',
              eventDate: `${day}T12:00:00Z`,
              eventOrigin: 'custom',
              platformUserId: '1',
            },
          ],
        }),
      }).catch(() => null);
      if (sent?.status !== 202) {
        await sleep(1000);
        continue;
      }
      const answered = performance.now();
      while (running) {
        const r = await fetch(`${base}/admin/projects/${projectId}/reports/daily?from=${day}&to=${day}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        }).catch(() => null);
        const rows = r?.ok ? ((await r.json()) as { events: number }[]) : [];
        if ((rows[0]?.events ?? 0) >= 1) {
          into.push(performance.now() - answered);
          break;
        }
        await sleep(50);
      }
      await sleep(1000);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
    },
  };
}

/** A live viewer of the project, counting what it receives. */
async function watch(
  base: string,
  projectId: string,
): Promise<{ messages(): number; skipped(): number; close(): void }> {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/admin/live?projectId=${projectId}`);
  let messages = 0;
  let skipped = 0;
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as { type?: string; skipped?: number };
    if (m.type === 'ready') return;
    messages++;
    skipped += m.skipped ?? 0;
  });
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => {
      ws.send(JSON.stringify({ token: ADMIN_TOKEN }));
      resolve();
    });
    ws.on('error', reject);
  });
  return { messages: () => messages, skipped: () => skipped, close: () => ws.close() };
}

/**
 * Bodies whose every event has a user drawn from a million, and one users[] profile (of the first
 * event's user) per request. Built as byte templates with 8-digit user slots, so the load generator
 * spends as little per request as it does for b-small and the comparison is the service's alone.
 */
function churnBody(templates: ReturnType<typeof serverBatch>[]): () => Buffer {
  const slots = userSlots(templates, true);
  let counter = 0;
  const digits = () => String(Math.floor(Math.random() * 1_000_000)).padStart(8, '0');
  return () => {
    const c = slots[counter % slots.length]!;
    const out = stamp(c.tpl, counter++);
    let first = '';
    for (const at of c.events) {
      const d = digits();
      if (first === '') first = d;
      out.write(d, at, 'latin1');
    }
    for (const at of c.profile) out.write(first, at, 'latin1');
    return out;
  };
}

/** Sessions under way at once: at b-small's rate each lasts a few seconds. */
const SESSIONS = 10_000;

/**
 * Traffic as people make it: users drawn from a million, each sending a session of 5 to 30 events; every event of a
 * request comes from one of SESSIONS sessions under way, and a session that ends is replaced by another user's. Over a
 * run most sessions are a user's first, so about one event in 17 (5.7%) is a new user's first. No users[] profiles,
 * as in b-small.
 */
function sessionsBody(templates: ReturnType<typeof serverBatch>[]): () => Buffer {
  const slots = userSlots(templates, false);
  const user = () => String(Math.floor(Math.random() * 1_000_000)).padStart(8, '0');
  const length = () => 5 + Math.floor(Math.random() * 26);
  const sessions = Array.from({ length: SESSIONS }, () => ({ user: user(), left: length() }));
  let counter = 0;
  return () => {
    const c = slots[counter % slots.length]!;
    const out = stamp(c.tpl, counter++);
    for (const at of c.events) {
      const i = Math.floor(Math.random() * SESSIONS);
      const session = sessions[i]!;
      out.write(session.user, at, 'latin1');
      if (--session.left === 0) sessions[i] = { user: user(), left: length() };
    }
    return out;
  };
}

/**
 * The templates with an 8-digit user slot in every event's platformUserId and, with `profile`, in one users[] profile
 * (of the first event's user), as byte templates: the load generator spends as little per request as it does for
 * b-small.
 */
function userSlots(
  templates: ReturnType<typeof serverBatch>[],
  profile: boolean,
): { tpl: ReturnType<typeof template>; events: number[]; profile: number[] }[] {
  const USER = '1########';
  return templates.map((t) => {
    const body = JSON.parse(t.buf.toString()) as { events: { platformUserId: string }[]; users?: unknown[] };
    for (const e of body.events) e.platformUserId = USER;
    if (profile)
      body.users = [{ messengerUserId: USER, username: `user${USER}`, firstName: 'Churn', languageCode: 'en' }];
    const tpl = template(body);
    const userSlots: number[] = [];
    const needle = Buffer.from('1########');
    for (let at = tpl.buf.indexOf(needle); at !== -1; at = tpl.buf.indexOf(needle, at + 1)) userSlots.push(at + 1);
    return { tpl, events: userSlots.slice(0, body.events.length), profile: userSlots.slice(body.events.length) };
  });
}

/** webapp: many users, each reusing its initData across batches. */
export async function webappScenario(
  name: string,
  db: Database,
  o: RunOptions & { events: number; connections: number; users: number; env?: Record<string, string> },
): Promise<Figures> {
  const signer = newSigner();
  const svc = await startService(db.url, { ...o.env, INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  try {
    const messengerBotId = 8000001;
    const { botId } = await provision(svc.url, messengerBotId);
    const tail = runTail();
    const templates = Array.from({ length: o.users }, (_, u) =>
      template({
        botId,
        auth: {
          initData: makeInitData(signer, {
            messengerBotId,
            user: { id: 200_000_000 + u, first_name: `User ${u}`, username: `user${u}`, language_code: 'en' },
          }),
        },
        events: Array.from({ length: o.events }, (_, i) =>
          event(u * o.events + i, { tail, users: o.users, webapp: true }),
        ),
      }),
    );
    let counter = 0;
    const body = () => stamp(templates[counter % templates.length]!, counter++);
    const headers = { 'content-type': 'application/json' };
    const f = await measure(name, db, svc, o.events, o, (durationS) =>
      load({ url: `${svc.url}/tg/webapp`, headers, connections: o.connections, durationS, body }),
    );
    const m = await scrape(svc.url);
    const hits = m.get('tg_ingest_cache_requests_total{cache="initdata",result="hit"}') ?? 0;
    const misses = m.get('tg_ingest_cache_requests_total{cache="initdata",result="miss"}') ?? 0;
    f.extra = { verifyCacheHitRatio: hits / Math.max(1, hits + misses), verifications: misses };
    return f;
  } finally {
    await svc.stop();
  }
}

/** PostgreSQL alone: the same rows, COPY in 1000-row batches over 2 connections into the same table. */
export async function ceiling(
  db: Database,
  o: { durationS: number; batchRows?: number; connections?: number; maxRows?: number },
): Promise<{ rowsPerS: number; rows: number; postgresCores: number; tableRowsBefore: number; tableRowsAfter: number }> {
  const batchRows = o.batchRows ?? 1000;
  const [{ project_id: projectId, bot_id: botId }] = await db.sql<{ project_id: string; bot_id: string }[]>`
    WITH p AS (INSERT INTO projects (name) VALUES ('ceiling') RETURNING project_id)
    INSERT INTO bots (project_id) SELECT project_id FROM p RETURNING project_id, bot_id`;
  const tail = runTail();
  const copyTemplates = Array.from({ length: 8 }, (_, k) => {
    const t = serverBatch(batchRows, { tail, users: 20_000 }, k * batchRows);
    const r = processBotApiBatch(JSON.parse(t.buf.toString()), {
      projectId: projectId!,
      botId: botId!,
      receivedAt: new Date().toISOString(),
      channel: 'bot_api',
      connection: 'bench',
      userId: null,
    });
    if (!r.ok) throw new Error('template refused');
    const text = Buffer.from(r.batch.rows);
    return { buf: text, slots: slotsIn(text, tail) };
  });
  // The writer's own client: the ceiling differs from the service only by what the service does.
  const conns = await Promise.all(
    Array.from({ length: o.connections ?? 2 }, () =>
      WireConnection.connect({ url: db.url, applicationName: 'bench ceiling', connectTimeoutMs: 5000 }),
    ),
  );
  const before = await tableRows(db.sql);
  let counter = 0;
  let rows = 0;
  const cpu = cpuWindow(process.pid);
  const started = performance.now();
  const deadline = started + o.durationS * 1000;
  await Promise.all(
    conns.map(async (sql) => {
      while (performance.now() < deadline && (o.maxRows === undefined || rows < o.maxRows)) {
        const [r] = await sql.script([
          { sql: COPY_EVENTS },
          { copyData: stamp(copyTemplates[counter % copyTemplates.length]!, counter++) },
        ]);
        if (r!.error !== null) throw r!.error;
        rows += batchRows;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = cpu.stop();
  for (const c of conns) c.close();
  return {
    rowsPerS: rows / seconds,
    rows,
    postgresCores: used.postgresCores,
    tableRowsBefore: before,
    tableRowsAfter: await tableRows(db.sql),
  };
}
