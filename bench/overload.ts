// `overload`: b-small's traffic offered open-loop at twice the rate b-small sustained in the same
// run. A service that degrades gracefully keeps its goodput, answers what it accepts in bounded
// time and turns the rest away at once with Retry-After, instead of queueing until clients time out.
import { provision, type Database, scrape, startService, tableRows } from './lib/env.js';
import { connectionPool, openLoop, type OpenLoopResult } from './lib/open-loop.js';
import { runTail, serverBatch, stamp } from './lib/payloads.js';
import { atPriority, cpuWindow, peakRssMiB } from './lib/proc.js';

export interface OverloadFigures {
  offeredPerS: number;
  /** Events answered 202, per second of the schedule. */
  goodputEventsPerS: number;
  result: OpenLoopResult;
  rowsStored: number;
  eventsAccepted: number;
  peakRssMiB: number;
  /** The service's event-loop delay over the window (ms; prom-client samples every 10 ms). */
  serviceLoopP99: number;
  serviceLoopMax: number;
  serverCores: number;
  postgresCores: number;
  loadGeneratorCores: number;
  machineCores: number;
  /** The load generator's nice value while it measured (GENERATOR_NICE when the system allowed it). */
  generatorNice: number;
}

export const OVERLOAD_EVENTS = 10;

/**
 * Every latency runs from when a request was due, so the generator's own lateness counts as the service's. Clients are
 * other machines; here the generator shares two cores with the service and PostgreSQL, and at equal priority waited
 * for a core as long as the service did (its event loop at p99 ~23 ms, shed answers 13–15 ms later from when due than
 * from when written). Raised, it sends and reads on time (that gap 4–5 ms), with the CPU it used before (0.33–0.38 of a
 * core); what it no longer waits, the service and PostgreSQL may (their figures here are, if anything, pessimistic).
 */
const GENERATOR_NICE = -10;

export async function overloadScenario(
  db: Database,
  o: { rate: number; durationS: number; warmupS: number; env?: Record<string, string> },
): Promise<OverloadFigures> {
  const svc = await startService(db.url, o.env);
  try {
    const { token } = await provision(svc.url);
    const tail = runTail();
    const templates = Array.from({ length: 8 }, (_, k) =>
      serverBatch(OVERLOAD_EVENTS, { tail, users: 20_000 }, k * OVERLOAD_EVENTS),
    );
    let counter = 0;
    const pool = connectionPool();
    const run = (rate: number, durationS: number) =>
      openLoop({
        url: `${svc.url}/tg`,
        headers: { 'Content-Type': 'application/json', 'X-API-Key': token },
        rate,
        durationS,
        body: () => stamp(templates[counter % templates.length]!, counter++),
        pool,
      });
    await db.sql`CHECKPOINT`;
    // Warm-up at the rate the service sustains: caches, JIT and the table's first pages.
    await run(o.rate / 2, o.warmupS);
    const before = await tableRows(db.sql);
    // prom-client's event-loop delay histogram restarts at each scrape: this one starts the window's.
    await scrape(svc.url);
    const cpu = cpuWindow(svc.pid);
    const { value: result, nice } = await atPriority(GENERATOR_NICE, () => run(o.rate, o.durationS));
    const used = cpu.stop();
    pool.close();
    const loop = await scrape(svc.url);
    const after = await tableRows(db.sql);
    const accepted = (result.byStatus['202']?.count ?? 0) * OVERLOAD_EVENTS;
    return {
      offeredPerS: o.rate,
      goodputEventsPerS: accepted / o.durationS,
      result,
      rowsStored: after - before,
      eventsAccepted: accepted,
      peakRssMiB: peakRssMiB(svc.pid),
      serviceLoopP99: (loop.get('nodejs_eventloop_lag_p99_seconds') ?? 0) * 1000,
      serviceLoopMax: (loop.get('nodejs_eventloop_lag_max_seconds') ?? 0) * 1000,
      serverCores: used.serverCores,
      postgresCores: used.postgresCores,
      loadGeneratorCores: used.loadGeneratorCores,
      machineCores: used.machineCores,
      generatorNice: nice,
    };
  } finally {
    await svc.stop();
  }
}
