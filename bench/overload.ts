// `overload`: b-small's traffic offered open-loop at twice the rate b-small sustained in the same
// run. A service that degrades gracefully keeps its goodput, answers what it accepts in bounded
// time and turns the rest away at once with Retry-After, instead of queueing until clients time out.
import { type Database, freshDatabase, provision, scrape, startService, tableRows } from './lib/env.js';
import { connectionPool, openLoop, type OpenLoopResult } from './lib/open-loop.js';
import { runTail, serverBatch, stamp } from './lib/payloads.js';
import { atPriority, cpuWindow, peakRssMiB } from './lib/proc.js';
import { fmt, median, type Result, type Row } from './lib/report.js';
import { botApiScenario, type Figures } from './scenarios.js';

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
  mainThreadCores: number;
  mainThreadWaitCores: number;
  postgresCores: number;
  loadGeneratorCores: number;
  machineCores: number;
  /** The load generator's nice value while it measured (the one asked for, when the system allowed it). */
  generatorNice: number;
}

export const OVERLOAD_EVENTS = 10;

/**
 * Clients are other machines; here the load generator shares two cores with the service and PostgreSQL, and which way
 * that skews depends on its priority. At equal priority, as autocannon in b-small, it waits for a core as long as the
 * service does, and every latency runs from when a request was due, so its own lateness counts as the service's (shed
 * answers 13–15 ms later from when due than from when written). Raised, it sends and reads on time (that gap 4–5 ms) but
 * takes its core at once whenever it wakes: the service's main thread then waits for a core longer (0.26–0.29 of a
 * second each second against 0.20–0.23) and gets less of one (0.69–0.72 against 0.74–0.78); goodput was 0.86× b-small
 * against 1.01× at the median of nine alternated runs. So each round runs the overload twice, and each goal is judged
 * where the rig does not count against it: goodput at equal priority, like for like with b-small; latency with the
 * generator raised.
 */
const GENERATOR_NICE = -10;

async function overloadScenario(
  db: Database,
  o: { rate: number; durationS: number; warmupS: number; nice: number; env?: Record<string, string> },
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
    const { value: result, nice } = await atPriority(o.nice, () => run(o.rate, o.durationS));
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
      mainThreadCores: used.mainThreadCores,
      mainThreadWaitCores: used.mainThreadWaitCores,
      postgresCores: used.postgresCores,
      loadGeneratorCores: used.loadGeneratorCores,
      machineCores: used.machineCores,
      generatorNice: nice,
    };
  } finally {
    await svc.stop();
  }
}

/** What one overload run shows, against the b-small it doubled. */
interface Judged {
  goodputRatio: number;
  p99: number;
  shedCount: number;
  shedP99: number;
  shedP99FromWrite: number;
  shedShare: number;
  noRetryAfter: number;
  failed: number;
  rowsMatch: boolean;
  row: Row;
  line: string;
}

function judge(f: OverloadFigures, capacity: number, label: string, durationS: number): Judged {
  const r = f.result;
  const ok = r.byStatus['202'] ?? { count: 0, p50: 0, p99: 0, max: 0, withoutRetryAfter: 0 };
  const isShed = ([status]: [string, unknown]) => status === '503' || status === '429';
  const shed = Object.entries(r.byStatus).filter(isShed);
  const shedCount = shed.reduce((a, [, v]) => a + v.count, 0);
  const shedP99 = Math.max(0, ...shed.map(([, v]) => v.p99));
  const shedFromWrite = Object.entries(r.byStatusFromWrite).filter(isShed);
  const shedP50FromWrite = Math.max(0, ...shedFromWrite.map(([, v]) => v.p50));
  const shedP99FromWrite = Math.max(0, ...shedFromWrite.map(([, v]) => v.p99));
  const other = Object.entries(r.byStatus)
    .filter(([s]) => !['202', '503', '429'].includes(s))
    .reduce((a, [, v]) => a + v.count, 0);
  const goodputRatio = f.goodputEventsPerS / (capacity * OVERLOAD_EVENTS);
  const failed = r.timeouts + r.errors + r.unsent + other;
  const rowsMatch = f.rowsStored === f.eventsAccepted;
  return {
    goodputRatio,
    p99: ok.p99,
    shedCount,
    shedP99,
    shedP99FromWrite,
    shedShare: shedCount / Math.max(1, r.offered),
    noRetryAfter: shed.reduce((a, [, v]) => a + v.withoutRetryAfter, 0),
    failed,
    rowsMatch,
    row: {
      scenario: `${label} (b-small's traffic open-loop at 2× its rate, ${fmt(f.offeredPerS)} req/s, ${durationS} s)`,
      'events/s': f.goodputEventsPerS,
      'req/s': ok.count / durationS,
      'p50 ms': ok.p50,
      'p99 ms': ok.p99,
      failed,
      'server cores': f.serverCores,
      'main thread': f.mainThreadCores,
      'main thread waiting': f.mainThreadWaitCores,
      'pg cores': f.postgresCores,
      'autocannon cores': f.loadGeneratorCores,
      'machine busy': f.machineCores,
      'peak RSS MiB': f.peakRssMiB,
      shed: shedCount,
      'shed p99 ms': shedP99,
      'shed p50/p99 ms from write': `${shedP50FromWrite.toFixed(0)}/${shedP99FromWrite.toFixed(0)}`,
      connections: r.peakConnections,
      'loop delay p99/max ms (service)': `${f.serviceLoopP99.toFixed(0)}/${f.serviceLoopMax.toFixed(0)}`,
      'loop delay p99/max ms (load generator)': `${r.generatorDelayP99.toFixed(0)}/${r.generatorDelayMax.toFixed(0)}`,
    },
    line: `${label}: goodput ${goodputRatio.toFixed(2)}× b-small (${fmt(capacity)} requests/s); p99 of 202 ${ok.p99.toFixed(0)} ms; ${fmt(shedCount)} shed, p99 ${shedP99.toFixed(0)} ms (${shedP99FromWrite.toFixed(0)} from write); ${failed} failed (${r.timeouts} timeouts, ${r.errors} connection errors, ${r.unsent} unsent at ${r.peakConnections} connections, ${other} other answers); rows ${fmt(f.rowsStored)} = events accepted ${fmt(f.eventsAccepted)}: ${rowsMatch ? 'yes' : 'NO'}`,
  };
}

export interface OverloadRounds {
  /** Each round's b-small, as measured, and its overload runs' rows for the throughput table. */
  rounds: { small: Figures; rows: Row[] }[];
  results: Result[];
  /** The goals, judged on the rounds' medians (those that must always hold, on every run). */
  summary: string;
}

/**
 * One b-small and one overload differ from run to run by more than the goals' margins on a shared machine (four runs
 * of one build: b-small 2,123–2,825 requests/s, goodput 0.77–1.52× it). So they run in rounds, a b-small and at once
 * the overload at twice what it sustained, with the load generator first at b-small's priority and then raised (see
 * GENERATOR_NICE), each on a fresh database; `say` hears each run's line as it ends.
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
  /** Per round: goodput from the run at equal priority, latency from the run with the generator raised. */
  const per: { even: Judged; raised: Judged; peakRss: number; smallPeakRss: number }[] = [];
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
    const runs: { judged: Judged; peakRss: number }[] = [];
    for (const nice of [0, GENERATOR_NICE]) {
      const db = await freshDatabase(serverUrl);
      try {
        const f = await overloadScenario(db, {
          rate: 2 * capacity,
          durationS: o.durationS,
          warmupS: o.warmupS,
          nice,
          env: o.env,
        });
        const judged = judge(
          f,
          capacity,
          `overload round ${round}, load generator at nice ${f.generatorNice}`,
          o.durationS,
        );
        o.say(judged.line);
        runs.push({ judged, peakRss: f.peakRssMiB });
      } finally {
        await db.drop();
      }
    }
    per.push({
      even: runs[0]!.judged,
      raised: runs[1]!.judged,
      peakRss: Math.max(...runs.map((r) => r.peakRss)),
      smallPeakRss: small.peakRssMiB,
    });
    rounds.push({ small, rows: runs.map((r) => r.judged.row) });
  }
  const mid = (pick: (x: (typeof per)[number]) => number) => median(per.map(pick));
  const sum = (pick: (x: Judged) => number) => per.reduce((a, x) => a + pick(x.even) + pick(x.raised), 0);
  const peakRss = Math.max(...per.map((x) => x.peakRss));
  const goals = [
    `goodput ${mid((x) => x.even.goodputRatio).toFixed(2)}× b-small, load generator at b-small's priority (goal ≥ 0.9×)`,
    `with the load generator raised: p99 of 202 ${mid((x) => x.raised.p99).toFixed(0)} ms (goal < 250), ${fmt(mid((x) => x.raised.shedCount))} shed (503/429), p99 ${mid((x) => x.raised.shedP99).toFixed(0)} ms (goal < 50)`,
    `in all runs: ${sum((x) => x.noRetryAfter)} shed without Retry-After, ${sum((x) => x.failed)} timeouts, connection errors, unsent or other answers (goal 0), rows = events accepted: ${per.every((x) => x.even.rowsMatch && x.raised.rowsMatch) ? 'yes' : 'NO'}, peak RSS ${peakRss.toFixed(0)} MiB (b-small ${Math.max(...per.map((x) => x.smallPeakRss)).toFixed(0)} MiB)`,
  ];
  return {
    rounds,
    results: [
      { name: 'overload_goodput_ratio_to_b-small', value: mid((x) => x.even.goodputRatio), unit: 'ratio' },
      { name: 'overload_goodput_ratio_raised_generator', value: mid((x) => x.raised.goodputRatio), unit: 'ratio' },
      { name: 'overload_p99_202', value: mid((x) => x.raised.p99), unit: 'ms' },
      { name: 'overload_p99_shed', value: mid((x) => x.raised.shedP99), unit: 'ms' },
      { name: 'overload_p99_shed_from_write', value: mid((x) => x.raised.shedP99FromWrite), unit: 'ms' },
      { name: 'overload_shed_share', value: mid((x) => x.raised.shedShare), unit: 'ratio' },
      { name: 'overload_peak_rss', value: Math.round(peakRss), unit: 'MiB' },
    ],
    summary: `overload, median of ${o.rounds} rounds: ${goals.join('; ')}`,
  };
}
