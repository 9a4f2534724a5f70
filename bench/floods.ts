// Credential floods beside valid traffic, in one run on one service: the valid traffic is measured
// alone, then again while a flood runs from a process of its own (256 client addresses through
// X-Forwarded-For, the service trusting its proxy). What matters: the share of valid throughput
// kept, and that no valid client saw anything but a 2xx.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Database, provision, scrape, startService } from './lib/env.js';
import { makeInitData, newSigner } from './lib/initdata.js';
import { load, type LoadResult } from './lib/load.js';
import { event, runTail, serverBatch, stamp, template } from './lib/payloads.js';
import { cpuSeconds, cpuWindow } from './lib/proc.js';

const run = promisify(execFile);
const DRIVER = fileURLToPath(new URL('./flood-driver.js', import.meta.url));

export interface FloodFigures {
  name: string;
  aloneReqPerS: number;
  floodedReqPerS: number;
  kept: number;
  validNon2xx: number;
  floodReqPerS: number;
  floodStatuses: Record<string, number>;
  serverCores: number;
  /** The flood's own load generator: on a shared machine, CPU the valid traffic cannot have. */
  floodDriverCores: number;
  /** What the flood cost the service: initData verifications or token lookups that reached the database. */
  costlyChecks: number;
}

export async function flood(kind: 'a-forged-flood' | 'b-unknown-token-flood', db: Database, o: { durationS: number; warmupS: number; connections: number; floodConnections: number }): Promise<FloodFigures> {
  const signer = newSigner();
  const svc = await startService(db.url, { TRUST_PROXY: '1', INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  try {
    const messengerBotId = 8000001;
    const { botId, token } = await provision(svc.url, messengerBotId);
    const tail = runTail();
    let counter = 0;
    let valid: (seconds: number) => Promise<LoadResult>;
    if (kind === 'a-forged-flood') {
      // Valid mini-app traffic: 1000 users, each reusing its (verified, cached) initData.
      const templates = Array.from({ length: 1000 }, (_, u) => template({
        botId,
        auth: { initData: makeInitData(signer, { messengerBotId, user: { id: 300_000_000 + u, first_name: `User ${u}` } }) },
        events: Array.from({ length: 10 }, (_, i) => event(u * 10 + i, { tail, users: 1000, webapp: true })),
      }));
      valid = (s) => load({ url: `${svc.url}/tg/webapp`, headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.10' }, connections: o.connections, durationS: s, body: () => stamp(templates[counter % templates.length]!, counter++) });
    } else {
      const templates = Array.from({ length: 8 }, (_, k) => serverBatch(10, { tail, users: 20_000 }, k * 10));
      valid = (s) => load({ url: `${svc.url}/tg`, headers: { 'content-type': 'application/json', 'x-api-key': token, 'x-forwarded-for': '192.0.2.10' }, connections: o.connections, durationS: s, body: () => stamp(templates[counter % templates.length]!, counter++) });
    }
    await valid(o.warmupS);
    const alone = await valid(o.durationS);
    const before = await scrape(svc.url);
    const floodRun = run(process.execPath, [DRIVER, svc.url, kind === 'a-forged-flood' ? 'forged-initdata' : 'unknown-token', String(o.floodConnections), String(o.durationS + 2), botId]);
    await new Promise((r) => setTimeout(r, 1000));
    const cpu = cpuWindow(svc.pid);
    const driverPid = floodRun.child.pid!;
    const driver0 = cpuSeconds(driverPid);
    const flooded = await valid(o.durationS);
    const driverCores = (cpuSeconds(driverPid) - driver0) / o.durationS;
    const used = cpu.stop();
    const f = JSON.parse((await floodRun).stdout) as { rps: number; statuses: Record<string, number> };
    const after = await scrape(svc.url);
    const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    return {
      name: kind === 'a-forged-flood'
        ? `a-forged-flood (A valid, 10-event batches, ${o.connections} conn; flood of forged initData, ${o.floodConnections} conn)`
        : `b-unknown-token-flood (B valid, 10-event batches, ${o.connections} conn; flood of unknown tokens, ${o.floodConnections} conn)`,
      aloneReqPerS: alone.rps,
      floodedReqPerS: flooded.rps,
      kept: flooded.rps / alone.rps,
      validNon2xx: flooded.non2xx + flooded.errors + flooded.timeouts,
      floodReqPerS: f.rps,
      floodStatuses: f.statuses,
      serverCores: used.serverCores,
      floodDriverCores: driverCores,
      costlyChecks: kind === 'a-forged-flood'
        ? delta('tg_ingest_cache_requests_total{cache="initdata",result="miss"}')
        : delta('tg_ingest_cache_requests_total{cache="token",result="miss"}'),
    };
  } finally {
    await svc.stop();
  }
}
