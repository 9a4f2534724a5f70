// Floods beside valid traffic, in one run on one service: the valid traffic is measured alone,
// then again while a flood runs from a process of its own (through X-Forwarded-For, the service
// trusting its proxy, from 256 client addresses or from one). What matters: the share of valid
// throughput kept, and that no valid client saw anything but a 2xx. The solo tests run the same
// scenarios, shorter.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Database, provision, scrape, startService } from './lib/env.js';
import { makeInitData, newSigner, type Signer } from './lib/initdata.js';
import { load, type LoadResult } from './lib/load.js';
import { event, runTail, serverBatch, stamp, template } from './lib/payloads.js';
import { cpuSeconds, cpuWindow } from './lib/proc.js';

const run = promisify(execFile);
// The compiled driver (dist/bench), also when this module is loaded from source by a test.
const DRIVER = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? './flood-driver.js' : '../dist/bench/flood-driver.js', import.meta.url),
);

export const FLOODS = {
  'a-forged-flood': {
    label: 'webapp valid (1000 verified sessions); flood of forged initData',
    driver: 'forged-initdata',
    addresses: 256,
    valid: 'sessions',
  },
  'b-unknown-token-flood': {
    label: 'bot_api valid; flood of unknown tokens',
    driver: 'unknown-token',
    addresses: 256,
    valid: 'bot_api',
  },
  'a-gzip-flood': {
    label:
      'webapp valid (1000 verified sessions); 999-byte gzip bodies inflating to 960 KB with no bot, from 256 addresses',
    driver: 'gzip-envelope',
    addresses: 256,
    valid: 'sessions',
  },
  'a-gzip-flood-one-address': {
    label: 'same, the flood from one address',
    driver: 'gzip-envelope',
    addresses: 1,
    valid: 'sessions',
  },
  'a-new-sessions-flood': {
    label: 'webapp valid: 2000 new sessions, each reusing its initData, from the address of a forged-initData flood',
    driver: 'forged-initdata',
    addresses: 1,
    valid: 'new-sessions',
  },
} as const;
export type FloodKind = keyof typeof FLOODS;

export interface FloodFigures {
  name: string;
  aloneReqPerS: number;
  floodedReqPerS: number;
  kept: number;
  /** Valid requests answered other than 2xx, and by status. */
  validNon2xx: number;
  validStatuses: Record<string, number>;
  floodReqPerS: number;
  floodStatuses: Record<string, number>;
  serverCores: number;
  /** The flood's own load generator: on a shared machine, CPU the valid traffic cannot have. */
  floodDriverCores: number;
  /** What the flood cost the service: initData verifications or token lookups that reached the database. */
  costlyChecks: number;
}

export interface FloodTarget {
  url: string;
  pid: number;
  signer: Signer;
  messengerBotId: number;
  botId: string;
  token: string;
}

/** The address of the valid traffic: the flood's own in a-new-sessions-flood. */
const VALID_ADDRESS = '192.0.2.10';

/**
 * Valid traffic alone, then beside the flood. The service must trust its proxy (TRUST_PROXY=1) and accept the signer's
 * key.
 */
export async function runFlood(
  kind: FloodKind,
  t: FloodTarget,
  o: { durationS: number; warmupS: number; connections: number; floodConnections: number },
): Promise<FloodFigures> {
  const f = FLOODS[kind];
  const tail = runTail();
  let counter = 0;
  const sessions = (users: number, first: number) =>
    Array.from({ length: users }, (_, u) =>
      template({
        botId: t.botId,
        auth: {
          initData: makeInitData(t.signer, {
            messengerBotId: t.messengerBotId,
            user: { id: first + u, first_name: `User ${u}` },
          }),
        },
        events: Array.from({ length: 10 }, (_, i) => event(u * 10 + i, { tail, users, webapp: true })),
      }),
    );
  const statuses: Record<string, number> = {};
  const count = (r: LoadResult) => {
    for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
    return r;
  };
  let valid: (seconds: number, phase: number) => Promise<LoadResult>;
  if (f.valid === 'bot_api') {
    const templates = Array.from({ length: 8 }, (_, k) => serverBatch(10, { tail, users: 20_000 }, k * 10));
    valid = (s) =>
      load({
        url: `${t.url}/tg`,
        headers: { 'content-type': 'application/json', 'x-api-key': t.token, 'x-forwarded-for': '192.0.2.20' },
        connections: o.connections,
        durationS: s,
        body: () => stamp(templates[counter % templates.length]!, counter++),
      });
  } else {
    // Verified sessions, the same in every phase; or 2000 sessions never seen before in each phase.
    const fresh = f.valid === 'new-sessions';
    const byPhase = new Map<number, ReturnType<typeof sessions>>();
    const templatesOf = (phase: number) => {
      const key = fresh ? phase : 0;
      if (!byPhase.has(key)) byPhase.set(key, sessions(fresh ? 2000 : 1000, 300_000_000 + key * 2000));
      return byPhase.get(key)!;
    };
    valid = (s, phase) => {
      const templates = templatesOf(phase);
      return load({
        url: `${t.url}/tg/webapp`,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': fresh ? VALID_ADDRESS : '192.0.2.20' },
        connections: o.connections,
        durationS: s,
        body: () => stamp(templates[counter % templates.length]!, counter++),
      });
    };
  }
  await valid(o.warmupS, 0);
  const alone = count(await valid(o.durationS, 1));
  const before = await scrape(t.url);
  const floodRun = run(process.execPath, [
    DRIVER,
    t.url,
    f.driver,
    String(o.floodConnections),
    String(o.durationS + 2),
    t.botId,
    String(f.addresses),
  ]);
  await new Promise((r) => setTimeout(r, 1000));
  const cpu = cpuWindow(t.pid);
  const driverPid = floodRun.child.pid!;
  const driver0 = cpuSeconds(driverPid);
  const flooded = count(await valid(o.durationS, 2));
  const driverCores = (cpuSeconds(driverPid) - driver0) / o.durationS;
  const used = cpu.stop();
  const fl = JSON.parse((await floodRun).stdout) as { rps: number; statuses: Record<string, number> };
  const after = await scrape(t.url);
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  return {
    name: `${kind} (${f.label}; valid ${o.connections} conn, flood ${o.floodConnections} conn)`,
    aloneReqPerS: alone.rps,
    floodedReqPerS: flooded.rps,
    kept: flooded.rps / alone.rps,
    validNon2xx: alone.non2xx + alone.errors + alone.timeouts + flooded.non2xx + flooded.errors + flooded.timeouts,
    validStatuses: statuses,
    floodReqPerS: fl.rps,
    floodStatuses: fl.statuses,
    serverCores: used.serverCores,
    floodDriverCores: driverCores,
    costlyChecks:
      f.driver === 'unknown-token'
        ? delta('tg_ingest_cache_requests_total{cache="token",result="miss"}')
        : delta('tg_ingest_cache_requests_total{cache="initdata",result="miss"}') +
          delta('tg_ingest_pipeline_tasks_total{kind="webapp_open",where="pool"}') +
          delta('tg_ingest_pipeline_tasks_total{kind="webapp_open_low_priority",where="pool"}'),
  };
}

/** `make bench`: a service of its own for each flood. */
export async function flood(
  kind: FloodKind,
  db: Database,
  o: { durationS: number; warmupS: number; connections: number; floodConnections: number },
): Promise<FloodFigures> {
  const signer = newSigner();
  const svc = await startService(db.url, { TRUST_PROXY: '1', INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  try {
    const messengerBotId = 8000001;
    const { botId, token } = await provision(svc.url, messengerBotId);
    return await runFlood(kind, { url: svc.url, pid: svc.pid, signer, messengerBotId, botId, token }, o);
  } finally {
    await svc.stop();
  }
}
