// `overload`: b-small's traffic offered open-loop at twice the rate b-small sustained in the same
// run. A service that degrades gracefully keeps its goodput, answers what it accepts in bounded
// time and turns the rest away at once with Retry-After, instead of queueing until clients time out.
import { type Database, freshDatabase, provision, scrape, startService, tableRows } from './lib/env.js';
import { connectionPool, openLoop, type OpenLoopResult, type StatusFigures } from './lib/open-loop.js';
import { runTail, serverBatch, stamp } from './lib/payloads.js';
import { cpuWindow, peakRssMiB } from './lib/proc.js';
import { fmt, median, type Result, type Row } from './lib/report.js';
import { botApiScenario, type Figures } from './scenarios.js';

interface OverloadFigures {
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
  mainThreadCores: number;
  mainThreadWaitCores: number;
  postgresCores: number;
  loadGeneratorCores: number;
  machineCores: number;
}

const OVERLOAD_EVENTS = 10;

/**
 * Clients are other machines; here the load generator shares two cores with the service and PostgreSQL, so it runs
 * late at times, and a latency timed from when a request was due would count its lateness as the service's. Latency is
 * judged from when each request was written, at the generator's own priority, as autocannon runs beside b-small
 * (raised, it takes the service's main thread a core more often: performance.md).
 */
async function overloadScenario(
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
    const result = await run(o.rate, o.durationS);
    const used = cpu.stop();
    pool.close();
    const loop = await scrape(svc.url);
    const after = await tableRows(db.sql);
    const accepted = (result.byStatus['202']?.count ?? 0) * OVERLOAD_EVENTS;
    return {
      offeredPerS: o.rate,
      // Over the time the schedule took: a generator running late offers less per second than asked.
      goodputEventsPerS: accepted / result.seconds,
      result,
      rowsStored: after - before,
      eventsAccepted: accepted,
      peakRssMiB: peakRssMiB(svc.pid),
      serviceLoopP99: (loop.get('nodejs_eventloop_lag_p99_seconds') ?? 0) * 1000,
      serviceLoopMax: (loop.get('nodejs_eventloop_lag_max_seconds') ?? 0) * 1000,
      serverCores: used.serverCores,
      mainThreadCores: used.mainThreadCores,
      mainThreadWaitCores: used.mainThreadWaitCores,
      postgresCores: used.postgresCores,
      loadGeneratorCores: used.loadGeneratorCores,
      machineCores: used.machineCores,
    };
  } finally {
    await svc.stop();
  }
}

/** What one overload run shows, against the b-small it doubled. */
interface Judged {
  figures: OverloadFigures;
  goodputRatio: number;
  ok: StatusFigures;
  /** 202s timed from when each request was written. */
  okFromWrite: StatusFigures;
  shedCount: number;
  shedP99: number;
  shedP50FromWrite: number;
  shedP99FromWrite: number;
  shedShare: number;
  noRetryAfter: number;
  /** Answers neither 202 nor shed. */
  other: number;
  /** Timeouts, connection errors, requests unsent and other answers: each a goal of 0. */
  failed: number;
  rowsMatch: boolean;
}

function judge(f: OverloadFigures, capacity: number): Judged {
  const r = f.result;
  const none = { count: 0, p50: 0, p99: 0, max: 0, withoutRetryAfter: 0 };
  const ok = r.byStatus['202'] ?? none;
  const okFromWrite = r.byStatusFromWrite['202'] ?? none;
  const isShed = ([status]: [string, unknown]) => status === '503' || status === '429';
  const shed = Object.entries(r.byStatus).filter(isShed);
  const shedFromWrite = Object.entries(r.byStatusFromWrite).filter(isShed);
  const shedCount = shed.reduce((a, [, v]) => a + v.count, 0);
  const other = Object.entries(r.byStatus)
    .filter(([s]) => !['202', '503', '429'].includes(s))
    .reduce((a, [, v]) => a + v.count, 0);
  return {
    figures: f,
    goodputRatio: f.goodputEventsPerS / (capacity * OVERLOAD_EVENTS),
    ok,
    okFromWrite,
    shedCount,
    shedP99: Math.max(0, ...shed.map(([, v]) => v.p99)),
    shedP50FromWrite: Math.max(0, ...shedFromWrite.map(([, v]) => v.p50)),
    shedP99FromWrite: Math.max(0, ...shedFromWrite.map(([, v]) => v.p99)),
    shedShare: shedCount / Math.max(1, r.offered),
    noRetryAfter: shed.reduce((a, [, v]) => a + v.withoutRetryAfter, 0),
    other,
    failed: r.timeouts + r.errors + r.unsent + other,
    rowsMatch: f.rowsStored === f.eventsAccepted,
  };
}

function overloadRow(j: Judged, label: string): Row {
  const f = j.figures;
  const r = f.result;
  return {
    scenario: `${label} (b-small's traffic open-loop at 2× its rate, ${fmt(f.offeredPerS)} req/s, ${fmt(r.seconds)} s)`,
    'events/s': f.goodputEventsPerS,
    'req/s': j.ok.count / r.seconds,
    'p50 ms': j.okFromWrite.p50,
    'p99 ms': j.okFromWrite.p99,
    failed: j.failed,
    'server cores': f.serverCores,
    'main thread': f.mainThreadCores,
    'main thread waiting': f.mainThreadWaitCores,
    'pg cores': f.postgresCores,
    'autocannon cores': f.loadGeneratorCores,
    'machine busy': f.machineCores,
    'peak RSS MiB': f.peakRssMiB,
    shed: j.shedCount,
    'shed p99 ms': j.shedP99,
    'shed p50/p99 ms from write': `${j.shedP50FromWrite.toFixed(0)}/${j.shedP99FromWrite.toFixed(0)}`,
    connections: r.peakConnections,
    'loop delay p99/max ms (service)': `${f.serviceLoopP99.toFixed(0)}/${f.serviceLoopMax.toFixed(0)}`,
    'loop delay p99/max ms (load generator)': `${r.generatorDelayP99.toFixed(0)}/${r.generatorDelayMax.toFixed(0)}`,
  };
}

function overloadLine(j: Judged, label: string, capacity: number): string {
  const f = j.figures;
  const r = f.result;
  const kinds = Object.entries(r.errorKinds).map(([k, n]) => `${k} ${n}`);
  const errors = `${r.errors} connection errors${kinds.length > 0 ? ` (${kinds.join(', ')})` : ''}`;
  return [
    `${label}: goodput ${j.goodputRatio.toFixed(2)}× b-small (${fmt(capacity)} requests/s)`,
    `offered ${fmt(r.offered / r.seconds)} requests/s of ${fmt(f.offeredPerS)} asked`,
    `p99 of 202 ${j.okFromWrite.p99.toFixed(0)} ms from write (${j.ok.p99.toFixed(0)} from due)`,
    `${fmt(j.shedCount)} shed, p99 ${j.shedP99FromWrite.toFixed(0)} ms from write (${j.shedP99.toFixed(0)} from due)`,
    `${j.failed} failed (${r.timeouts} timeouts, ${errors}, ${r.unsent} unsent at ${r.peakConnections} connections, ${j.other} other answers)`,
    `rows ${fmt(f.rowsStored)} = events accepted ${fmt(f.eventsAccepted)}: ${j.rowsMatch ? 'yes' : 'NO'}`,
  ].join('; ');
}

export interface OverloadRounds {
  /** Each round's b-small, as measured, and its overload runs' rows for the throughput table. */
  rounds: { small: Figures; rows: Row[] }[];
  results: Result[];
  /** The goals, judged on the rounds' medians (those that must always hold, on every run). */
  summary: string;
}

/**
 * One b-small and one overload differ from run to run by more than the goals' margins on a shared machine. So they run
 * in rounds, a b-small and at once the overload at twice what it sustained, each on a fresh database; `say` hears each
 * run's line as it ends.
 */
export async function overloadRounds(
  serverUrl: string,
  o: {
    rounds: number;
    durationS: number;
    warmupS: number;
    smallDurationS: number;
    smallConnections: number;
    env: Record<string, string>;
    say: (line: string) => void;
  },
): Promise<OverloadRounds> {
  const rounds: OverloadRounds['rounds'] = [];
  const per: { run: Judged; smallPeakRss: number }[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    const smallDb = await freshDatabase(serverUrl);
    let small: Figures;
    try {
      small = await botApiScenario(
        `b-small (bot_api, 10-event batches, ${o.smallConnections} conn), overload round ${round}`,
        smallDb,
        { durationS: o.smallDurationS, warmupS: o.warmupS, events: 10, connections: o.smallConnections, env: o.env },
      );
    } finally {
      await smallDb.drop();
    }
    const capacity = small.requestsPerS;
    const db = await freshDatabase(serverUrl);
    try {
      const f = await overloadScenario(db, {
        rate: 2 * capacity,
        durationS: o.durationS,
        warmupS: o.warmupS,
        env: o.env,
      });
      const j = judge(f, capacity);
      const label = `overload round ${round}`;
      o.say(overloadLine(j, label, capacity));
      rounds.push({ small, rows: [overloadRow(j, label)] });
      per.push({ run: j, smallPeakRss: small.peakRssMiB });
    } finally {
      await db.drop();
    }
  }
  const mid = (pick: (j: Judged) => number) => median(per.map((x) => pick(x.run)));
  const every = per.map((x) => x.run);
  const sum = (pick: (j: Judged) => number) => every.reduce((a, j) => a + pick(j), 0);
  const peakRss = Math.max(...every.map((j) => j.figures.peakRssMiB));
  const goals = [
    `goodput ${mid((j) => j.goodputRatio).toFixed(2)}× b-small (goal ≥ 0.9×)`,
    `timed from when written: p99 of 202 ${mid((j) => j.okFromWrite.p99).toFixed(0)} ms (goal < 1000), ${fmt(mid((j) => j.shedCount))} shed (503/429), p99 ${mid((j) => j.shedP99FromWrite).toFixed(0)} ms (goal < 50)`,
    `in all runs: ${sum((j) => j.noRetryAfter)} shed without Retry-After, ${sum((j) => j.failed)} timeouts, connection errors, unsent or other answers (goal 0), rows = events accepted: ${every.every((j) => j.rowsMatch) ? 'yes' : 'NO'}, peak RSS ${peakRss.toFixed(0)} MiB (these rounds' b-small ${Math.max(...per.map((x) => x.smallPeakRss)).toFixed(0)} MiB)`,
  ];
  return {
    rounds,
    results: [
      { name: 'overload_goodput_ratio_to_b-small', value: mid((j) => j.goodputRatio), unit: 'ratio' },
      { name: 'overload_p99_202', value: mid((j) => j.okFromWrite.p99), unit: 'ms' },
      { name: 'overload_p99_202_from_due', value: mid((j) => j.ok.p99), unit: 'ms' },
      { name: 'overload_p99_shed', value: mid((j) => j.shedP99FromWrite), unit: 'ms' },
      { name: 'overload_p99_shed_from_due', value: mid((j) => j.shedP99), unit: 'ms' },
      { name: 'overload_shed_share', value: mid((j) => j.shedShare), unit: 'ratio' },
      { name: 'overload_peak_rss', value: Math.round(peakRss), unit: 'MiB' },
    ],
    summary: `overload, median of ${o.rounds} rounds: ${goals.join('; ')}`,
  };
}
