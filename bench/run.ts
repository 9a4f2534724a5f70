// `make bench`: every scenario in one run on one PostgreSQL, each figure also as a ratio to the
// `ceiling` measured in the same run. `node dist/bench/run.js b-small a-small` runs a subset.
// BENCH_DURATION_S (10) and BENCH_WARMUP_S (3) set the measuring and warm-up windows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519Bench } from './ed25519.js';
import { freshDatabase, machineLine, postgres, type Postgres } from './lib/env.js';
import { fmt, median, type Result, resultLines, type Row, table } from './lib/report.js';
import { flood, FLOODS, type FloodKind } from './floods.js';
import { benchPlan } from './lib/payloads.js';
import { preload } from './lib/preload.js';
import { reports50m } from './reports.js';
import { funnel50m } from './funnel.js';
import { overloadRounds } from './overload.js';
import { refusalScenario } from './refusal.js';
import { closedLoopSweep, SWEEP, type SweepName } from './closed-loop.js';
import { awaitErasure, ERASURE_USERS, plantAndRequest, settle } from './erasure.js';
import { ceiling, webappScenario, botApiScenario, type Figures } from './scenarios.js';

const ALL = [
  'ceiling',
  'b-large',
  'b-large-plan',
  'b-large-10pct-invalid',
  'b-large-reports',
  'b-small',
  'b-small-live',
  'b-small-users',
  'b-small-sessions',
  'b-small-pool',
  'b-small-scraped',
  'b-small-1000',
  'b-small-2000',
  'a-small-1000',
  'overload',
  'refusal',
  'a-small',
  'a-forged-flood',
  'b-unknown-token-flood',
  'a-gzip-flood',
  'a-gzip-flood-one-address',
  'a-new-sessions-flood',
  'ed25519',
  'user-index-cost',
  'b-large-50m',
  'reports-50m',
  'funnel-50m',
  'erasure-50m',
  'b-large-lake',
] as const;
type Name = (typeof ALL)[number];

function figuresRow(f: Figures, ceilingRowsPerS: number | null): Row {
  const row: Row = {
    scenario: f.name,
    'events/s': f.eventsPerS,
    'req/s': f.requestsPerS,
    'p50 ms': f.p50Ms,
    'p99 ms': f.p99Ms,
    failed: f.failed,
    'answered 503': f.statuses['503'] ?? 0,
    'rows/commit': f.rowsPerCommit,
    'ms/commit': f.commitMs,
    'server cores': f.serverCores,
    'main thread': f.mainThreadCores,
    'main thread waiting': f.mainThreadWaitCores,
    'pg cores': f.postgresCores,
    'server µs/req': f.requestsPerS > 0 ? (f.serverCores * 1e6) / f.requestsPerS : 0,
    'pg µs/req': f.requestsPerS > 0 ? (f.postgresCores * 1e6) / f.requestsPerS : 0,
    'autocannon cores': f.loadGeneratorCores,
    'machine busy': f.machineCores,
    'peak RSS MiB': f.peakRssMiB,
    'table rows': `${fmt(f.tableRowsBefore)} → ${fmt(f.tableRowsAfter)}`,
  };
  if (ceilingRowsPerS !== null) row['× ceiling'] = f.eventsPerS / ceilingRowsPerS;
  for (const [k, v] of Object.entries(f.extra ?? {})) row[k] = v;
  return row;
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  for (const a of asked)
    if (!ALL.includes(a as Name)) throw new Error(`unknown scenario ${a}; known: ${ALL.join(', ')}`);
  const want = (n: Name) => asked.length === 0 || asked.includes(n);
  const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
  const warmupS = Number(process.env.BENCH_WARMUP_S ?? 3);
  const o = { durationS, warmupS };

  const pg: Postgres = await postgres();
  const out: string[] = [];
  const results: Result[] = [];
  const rows: Row[] = [];
  const say = (s: string) => {
    out.push(s);
    process.stderr.write(`${s}\n`);
  };
  say(machineLine(pg.version));
  say(
    `windows: ${warmupS} s warm-up, ${durationS} s measured; load generator, service and PostgreSQL share the machine`,
  );
  let ceilingRowsPerS: number | null = null;

  try {
    if (want('ceiling') || want('b-large')) {
      const db = await freshDatabase(pg.url);
      try {
        const c = await ceiling(db, { durationS });
        ceilingRowsPerS = c.rowsPerS;
        rows.push({
          scenario: 'ceiling (COPY 1000-row batches, 2 connections)',
          'events/s': c.rowsPerS,
          'pg cores': c.postgresCores,
          'table rows': `${fmt(c.tableRowsBefore)} → ${fmt(c.tableRowsAfter)}`,
          '× ceiling': 1,
        });
        results.push({ name: 'ceiling', value: Math.round(c.rowsPerS), unit: 'rows/s' });
        say(`ceiling: ${fmt(c.rowsPerS)} rows/s`);
      } finally {
        await db.drop();
      }
    }

    // BENCH_SERVICE_ENV: settings (JSON) for every service the scenarios below start, to compare builds of one run.
    const extraEnv = JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>;
    // b-large and its variants, each on a fresh table, compared with b-large of the same run.
    const conns = Number(process.env.BENCH_LARGE_CONNECTIONS ?? 8);
    // b-large-reports and its b-large rounds warm up past the aggregator's first folds over a fresh table (see below).
    const reportsWarmupS = Math.max(warmupS, 14);
    const largeVariants = [
      // The report aggregator off (it folds once at start, then hourly): b-large-reports measures what it costs.
      ['b-large', `b-large (bot_api, 1000-event batches, ${conns} conn)`, { env: { REPORTS_EVERY_MS: '3600000' } }],
      [
        'b-large-plan',
        'b-large-plan (same, a tracking plan of 6 event schemas, mode block, every event valid)',
        { plan: benchPlan('block'), env: { REPORTS_EVERY_MS: '3600000' } },
      ],
      [
        'b-large-10pct-invalid',
        'b-large-10pct-invalid (same, one event in ten rejected and quarantined)',
        { invalidEvery: 10, env: { REPORTS_EVERY_MS: '3600000' } },
      ],
      [
        'b-large-reports',
        `b-large-reports (same, the report aggregates folding in commits as by default, every 1 s; ${reportsWarmupS} s warm-up)`,
        { env: {} },
      ],
    ] as const;
    let latestDatabase: Awaited<ReturnType<typeof freshDatabase>> | null = null;
    const runLarge = async (
      label: string,
      extra: (typeof largeVariants)[number][2] & { warmupS?: number; freshness?: number[] },
    ): Promise<Figures> => {
      const db = await freshDatabase(pg.url);
      latestDatabase = db;
      try {
        return await botApiScenario(label, db, {
          ...o,
          events: 1000,
          connections: conns,
          ...extra,
          env: { ...extra.env, ...extraEnv },
        });
      } finally {
        await db.drop();
      }
    };
    let largeEventsPerS: number | null = null;
    for (const [name, label, extra] of largeVariants) {
      if (!want(name) || name === 'b-large-reports') continue;
      const f = await runLarge(label, extra);
      rows.push(figuresRow(f, ceilingRowsPerS));
      results.push({ name: `${name}_events`, value: Math.round(f.eventsPerS), unit: 'events/s' });
      results.push({ name: `${name}_p99`, value: f.p99Ms, unit: 'ms' });
      if (name === 'b-large') {
        largeEventsPerS = f.eventsPerS;
        if (ceilingRowsPerS)
          results.push({ name: 'b-large_ratio_to_ceiling', value: f.eventsPerS / ceilingRowsPerS, unit: 'ratio' });
      } else if (largeEventsPerS !== null)
        results.push({ name: `${name}_ratio_to_b-large`, value: f.eventsPerS / largeEventsPerS, unit: 'ratio' });
      say(`${name}: ${fmt(f.eventsPerS)} events/s`);
    }
    if (want('b-large-reports')) {
      // What the aggregates cost is a few percent: less than two 10 s runs of one build differ on a shared machine
      // (the aggregator off in both: 0.86–1.10×). So b-large and b-large-reports run side by side in rounds, in
      // alternating order (whichever runs second meets the first's checkpoints and vacuum), and the ratio is the
      // median of the rounds'; CPU per event (the service's and PostgreSQL's, µs) besides, which the machine's
      // neighbours move less.
      const variant = (n: string) => largeVariants.find(([name]) => name === n)!;
      const [, offLabel, off] = variant('b-large');
      const [, onLabel, on] = variant('b-large-reports');
      // Even, so that each build runs first as often as second; 12, as the medians of 4 rounds of one build still
      // ranged 0.85–1.09.
      const rounds = 2 * Math.max(1, Math.round(Number(process.env.BENCH_REPORTS_ROUNDS ?? 12) / 2) || 0);
      // How soon an event answered 202 is in the reports, under that load (goal: within 2 s at the defaults).
      const freshness: number[] = [];
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      const cpu = (f: Figures) => ((f.serverCores + f.postgresCores) * 1e6) / f.eventsPerS;
      const runs: Figures[] = [];
      // Both warm up past the aggregator's first folds (over a fresh table: every user new to report_active and
      // report_users, as on a UTC day's first folds, ~0.4 s of PostgreSQL for 8,000 users), so that the window
      // measured holds folds as the rest of a day's are.
      const warm = { warmupS: reportsWarmupS };
      for (let r = 0; r < rounds; r++) {
        const pair: Figures[] = [];
        for (const reports of r % 2 === 0 ? [false, true] : [true, false])
          pair[reports ? 1 : 0] = await runLarge(reports ? onLabel : offLabel, {
            ...(reports ? { ...on, freshness } : off),
            ...warm,
          });
        const [a, b] = pair as [Figures, Figures];
        ratios.push(b.eventsPerS / a.eventsPerS);
        cpuRatios.push(cpu(a) / cpu(b));
        say(
          `b-large-reports round ${r + 1}: ${fmt(b.eventsPerS)} against ${fmt(a.eventsPerS)} events/s (${ratios.at(-1)!.toFixed(3)}×); µs of CPU per event ${cpu(b).toFixed(1)} against ${cpu(a).toFixed(1)}`,
        );
        runs.push(b);
      }
      // The table shows the round whose ratio is the lowest of the middle two.
      const shown = runs[ratios.indexOf([...ratios].sort((x, y) => x - y)[(rounds - 1) >> 1]!)]!;
      rows.push(
        figuresRow(
          {
            ...shown,
            extra: {
              ...shown.extra,
              [`× b-large, ${rounds} rounds`]: ratios.map((x) => x.toFixed(2)).join(' '),
              '× b-large by CPU per event': cpuRatios.map((x) => x.toFixed(2)).join(' '),
            },
          },
          ceilingRowsPerS,
        ),
      );
      results.push({
        name: 'b-large-reports_events',
        value: Math.round(median(runs.map((f) => f.eventsPerS))),
        unit: 'events/s',
      });
      results.push({ name: 'b-large-reports_p99', value: median(runs.map((f) => f.p99Ms)), unit: 'ms' });
      results.push({ name: 'b-large-reports_ratio_to_b-large', value: median(ratios), unit: 'ratio' });
      results.push({ name: 'b-large-reports_cpu_ratio_to_b-large', value: median(cpuRatios), unit: 'ratio' });
      say(`b-large-reports: ${median(ratios).toFixed(3)}× b-large at the median of ${rounds} rounds (goal ≥ 0.95)`);
      const sorted = [...freshness].sort((x, y) => x - y);
      const p90 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] ?? Number.NaN;
      results.push({ name: 'b-large-reports_fresh_median_ms', value: Math.round(median(freshness)), unit: 'ms' });
      results.push({ name: 'b-large-reports_fresh_p90_ms', value: Math.round(p90), unit: 'ms' });
      say(
        `b-large-reports: an event in the reports ${Math.round(median(freshness))} ms after its 202 at the median, ${Math.round(p90)} ms at p90, ${sorted.length} probes (goal ≤ 2000 ms)`,
      );
    }

    /** Seconds the lake was behind when the load stopped, and how long it took to take every row stored. */
    const lakeCatchUp = async (): Promise<Record<string, number>> => {
      const db = latestDatabase!;
      const ended = Date.now();
      const lagAt = async () => {
        const [r] = await db.sql<{ at: number | null }[]>`
          SELECT (extract(epoch FROM max(exported_before)) * 1000)::float8 AS at FROM lake_dirs WHERE retired_at IS NULL`;
        return r?.at ?? 0;
      };
      const behind = (ended - (await lagAt())) / 1000;
      while ((await lagAt()) < ended && Date.now() - ended < 600_000) await new Promise((r) => setTimeout(r, 250));
      return {
        'lake behind s': Number(behind.toFixed(1)),
        'lake caught up s': Number(((Date.now() - ended) / 1000).toFixed(1)),
      };
    };
    if (want('b-large-lake')) {
      // As b-large-reports: b-large with the lake off and on, side by side in alternating rounds. The lake exports
      // every 5 s (its default is 60 s, which a 10 s window would mostly miss), so each window holds two exports.
      const rounds = 2 * Math.max(1, Math.round(Number(process.env.BENCH_LAKE_ROUNDS ?? 6) / 2) || 0);
      const ratios: number[] = [];
      const runs: Figures[] = [];
      for (let r = 0; r < rounds; r++) {
        const pair: Figures[] = [];
        for (const lake of r % 2 === 0 ? [false, true] : [true, false]) {
          const dir = mkdtempSync(join(tmpdir(), 'tg-bench-lake-'));
          try {
            pair[lake ? 1 : 0] = await runLarge(
              lake ? 'b-large-lake (same, the lake exporting every 5 s)' : 'b-large (lake off)',
              {
                env: { REPORTS_EVERY_MS: '3600000', ...(lake ? { EXPORT_DIR: dir, EXPORT_EVERY_MS: '5000' } : {}) },
                // Ingestion wins while it keeps the service busy; the lake catches up after: how far behind it was
                // when the load stopped, and how long it took to have every row.
                ...(lake ? { finish: lakeCatchUp } : {}),
              } as never,
            );
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
        const [a, b] = pair as [Figures, Figures];
        ratios.push(b.eventsPerS / a.eventsPerS);
        runs.push(b);
        say(
          `b-large-lake round ${r + 1}: ${fmt(b.eventsPerS)} against ${fmt(a.eventsPerS)} events/s (${ratios.at(-1)!.toFixed(3)}×); the lake ${b.extra?.['lake behind s']} s behind when the load stopped, caught up ${b.extra?.['lake caught up s']} s after`,
        );
      }
      const shown = runs[ratios.indexOf([...ratios].sort((x, y) => x - y)[(rounds - 1) >> 1]!)]!;
      rows.push(
        figuresRow(
          {
            ...shown,
            extra: { ...shown.extra, [`× b-large, ${rounds} rounds`]: ratios.map((x) => x.toFixed(2)).join(' ') },
          },
          ceilingRowsPerS,
        ),
      );
      results.push({ name: 'b-large-lake_ratio_to_b-large', value: median(ratios), unit: 'ratio' });
      results.push({
        name: 'b-large-lake_caught_up_s',
        value: median(runs.map((f) => Number(f.extra?.['lake caught up s'] ?? Number.NaN))),
        unit: 's',
      });
      say(`b-large-lake: ${median(ratios).toFixed(3)}× b-large at the median of ${rounds} rounds (goal ≥ 0.95)`);
    }

    const smallReqPerS = new Map<string, number>();
    const smallPgPerRequest = new Map<string, number>();
    const smallConnections = Number(process.env.BENCH_SMALL_CONNECTIONS ?? 100);
    const smallVariants = [
      ['b-small', `b-small (bot_api, 10-event batches, ${smallConnections} conn)`, extraEnv, undefined],
      ['b-small-live', 'b-small-live (same, one live viewer watching)', extraEnv, undefined],
      [
        'b-small-users',
        'b-small-users (same, each event a user of a million, one users[] profile per request)',
        extraEnv,
        undefined,
      ],
      [
        'b-small-sessions',
        'b-small-sessions (same, users of a million in sessions of 5-30 events, ~5.7% of events a new user)',
        extraEnv,
        undefined,
      ],
      [
        'b-small-pool',
        'b-small-pool (same, every body through the worker pool)',
        { ...extraEnv, INLINE_MAX_BYTES: '0' },
        undefined,
      ],
      ['b-small-scraped', 'b-small-scraped (same as b-small, /metrics polled every 100 ms)', extraEnv, 100],
    ] as const;
    for (const [name, label, env, scrapeEveryMs] of smallVariants) {
      if (!want(name)) continue;
      const db = await freshDatabase(pg.url);
      try {
        const f = await botApiScenario(label, db, {
          ...o,
          events: 10,
          connections: smallConnections,
          env,
          ...(name === 'b-small-users' ? { users: 'churn' as const } : {}),
          ...(name === 'b-small-sessions' ? { users: 'sessions' as const } : {}),
          viewer: name === 'b-small-live',
          ...(scrapeEveryMs === undefined ? {} : { scrapeEveryMs }),
        });
        rows.push(figuresRow(f, ceilingRowsPerS));
        smallReqPerS.set(name, f.requestsPerS);
        smallPgPerRequest.set(name, (f.postgresCores * 1e6) / f.requestsPerS);
        results.push({ name: `${name}_requests`, value: Math.round(f.requestsPerS), unit: 'req/s' });
        results.push({ name: `${name}_p99`, value: f.p99Ms, unit: 'ms' });
        if (name === 'b-small') {
          results.push({
            name: 'small_server_cpu_per_request',
            value: Math.round((f.serverCores * 1e6) / f.requestsPerS),
            unit: 'us',
          });
          results.push({
            name: 'small_pg_cpu_per_request',
            value: Math.round((f.postgresCores * 1e6) / f.requestsPerS),
            unit: 'us',
          });
        }
        if (name === 'b-small-live' && smallReqPerS.has('b-small'))
          results.push({
            name: 'b-small-live_ratio_to_b-small',
            value: f.requestsPerS / smallReqPerS.get('b-small')!,
            unit: 'ratio',
          });
        if ((name === 'b-small-users' || name === 'b-small-sessions') && smallReqPerS.has('b-small'))
          results.push({
            name: `${name}_ratio_to_b-small`,
            value: f.requestsPerS / smallReqPerS.get('b-small')!,
            unit: 'ratio',
          });
        if (name === 'b-small-users' || name === 'b-small-sessions') {
          const perEvent = Number(f.extra?.['new users per event'] ?? Number.NaN);
          results.push({ name: `${name}_new_users_per_event`, value: Number(perEvent.toFixed(3)), unit: 'ratio' });
          // What a new user costs PostgreSQL: its CPU per request beyond b-small's, over the new users a request brings.
          const basePg = smallPgPerRequest.get('b-small');
          if (basePg !== undefined)
            results.push({
              name: `${name}_pg_us_per_new_user`,
              value: Math.round(((f.postgresCores * 1e6) / f.requestsPerS - basePg) / (10 * perEvent)),
              unit: 'us',
            });
        }
        say(`${name}: ${fmt(f.requestsPerS)} req/s`);
        if (name === 'b-small-sessions' && smallReqPerS.has('b-small'))
          say(
            `b-small-sessions: ${(f.requestsPerS / smallReqPerS.get('b-small')!).toFixed(2)}× b-small (goal ≥ 0.9×), ${(Number(f.extra?.['new users per event']) * 100).toFixed(1)}% of events a new user's first`,
          );
      } finally {
        await db.drop();
      }
    }

    const sweep = SWEEP.filter((n) => want(n));
    if (sweep.length > 0) {
      const got = await closedLoopSweep(pg.url, sweep as SweepName[], {
        ...o,
        rounds: Math.max(1, Math.floor(Number(process.env.BENCH_SWEEP_ROUNDS ?? 3)) || 1),
        env: extraEnv,
      });
      for (const f of got.figures) rows.push(figuresRow(f, ceilingRowsPerS));
      results.push(...got.results);
      for (const line of got.lines) say(line);
    }

    if (want('overload')) {
      const overload = await overloadRounds(pg.url, {
        rounds: Math.max(1, Math.floor(Number(process.env.BENCH_OVERLOAD_ROUNDS ?? 3)) || 1),
        durationS: Number(process.env.BENCH_OVERLOAD_S ?? 30),
        warmupS,
        smallDurationS: durationS,
        smallConnections,
        env: extraEnv,
        say,
      });
      for (const r of overload.rounds) rows.push(figuresRow(r.small, ceilingRowsPerS), ...r.rows);
      results.push(...overload.results);
      say(overload.summary);
    }

    if (want('refusal')) {
      const f = await refusalScenario({ ...o, rounds: 2 });
      const front = median(f.cpuPerAnswer.front);
      const bare = median(f.cpuPerAnswer.bare);
      const each = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
      results.push({ name: 'refusal_cpu_per_answer', value: front, unit: 'us' });
      results.push({ name: 'refusal_floor_cpu_per_answer', value: bare, unit: 'us' });
      say(
        `refusal: µs of CPU per 503, the service's HTTP front and load shedder ${front.toFixed(1)} (${each(f.cpuPerAnswer.front)}), uWebSockets.js alone ${bare.toFixed(1)} (${each(f.cpuPerAnswer.bare)}); ${f.otherAnswers} other answers, errors or timeouts (goal 0)`,
      );
    }

    if (want('a-small')) {
      const db = await freshDatabase(pg.url);
      try {
        const f = await webappScenario('a-small (webapp, 10-event batches, 1000 users, 100 conn)', db, {
          ...o,
          events: 10,
          connections: 100,
          users: 1000,
        });
        rows.push(figuresRow(f, ceilingRowsPerS));
        results.push({ name: 'a-small_requests', value: Math.round(f.requestsPerS), unit: 'req/s' });
        results.push({ name: 'a-small_p99', value: f.p99Ms, unit: 'ms' });
        results.push({
          name: 'a-small_verify_cache_hit_ratio',
          value: Number(f.extra?.verifyCacheHitRatio ?? 0),
          unit: 'ratio',
        });
        if (smallReqPerS.has('b-small'))
          results.push({
            name: 'a-small_ratio_to_b-small',
            value: f.requestsPerS / smallReqPerS.get('b-small')!,
            unit: 'ratio',
          });
        say(`a-small: ${fmt(f.requestsPerS)} req/s`);
      } finally {
        await db.drop();
      }
    }

    if (want('user-index-cost')) {
      // What the erasure's bloom summaries of users (migration 15) cost ingestion: b-small and b-large with and without
      // them, in turn first, each on a fresh database.
      const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_INDEX_ROUNDS ?? 6)) || 1);
      const kinds = [
        ['b-small', 10, smallConnections],
        ['b-large', 1000, conns],
      ] as const;
      for (const [base, events, connections] of kinds) {
        const ratios: number[] = [];
        for (let round = 1; round <= rounds; round++) {
          const got: Record<string, Figures> = {};
          const order = round % 2 === 1 ? (['with', 'without'] as const) : (['without', 'with'] as const);
          for (const kind of order) {
            const db = await freshDatabase(pg.url);
            try {
              if (kind === 'without') await db.sql`DROP INDEX events_user_bloom`;
              got[kind] = await botApiScenario(
                `user-index-cost round ${round}: ${base} ${kind} the bloom summaries of users`,
                db,
                { ...o, events, connections, env: extraEnv },
              );
              rows.push(figuresRow(got[kind]!, ceilingRowsPerS));
            } finally {
              await db.drop();
            }
          }
          ratios.push(got.with!.eventsPerS / got.without!.eventsPerS);
        }
        results.push({ name: `user-index-cost_${base}_ratio`, value: median(ratios), unit: 'ratio' });
        say(
          `user-index-cost: ${base} with the bloom summaries of users ${median(ratios).toFixed(3)}× without them, median of ${rounds} alternated rounds (${ratios.map((r) => r.toFixed(2)).join(', ')}; goal ≥ 0.97×)`,
        );
      }
    }

    const floodRows: Row[] = [];
    // Connections (valid, flood): the credential floods as before; the envelope floods as the issue
    // that asked for them measured them (32 beside 32); new sessions 16 beside a flood of 32.
    const floodConnections: Record<FloodKind, [number, number]> = {
      'a-forged-flood': [64, 16],
      'b-unknown-token-flood': [64, 16],
      'a-gzip-flood': [32, 32],
      'a-gzip-flood-one-address': [32, 32],
      'a-new-sessions-flood': [16, 32],
    };
    for (const kind of Object.keys(FLOODS) as FloodKind[]) {
      if (!want(kind)) continue;
      const db = await freshDatabase(pg.url);
      try {
        const [connections, floodConns] = floodConnections[kind];
        const f = await flood(kind, db, { ...o, connections, floodConnections: floodConns });
        const answers = (a: Record<string, number>) =>
          Object.entries(a)
            .map(([s, n]) => `${s}: ${fmt(n)}`)
            .join(', ');
        floodRows.push({
          scenario: f.name,
          'valid req/s alone': f.aloneReqPerS,
          'valid req/s flooded': f.floodedReqPerS,
          kept: f.kept,
          'valid non-2xx': f.validNon2xx,
          'valid answers': answers(f.validStatuses),
          'flood req/s': f.floodReqPerS,
          'flood answers': answers(f.floodStatuses),
          'costly checks': f.costlyChecks,
          'server cores': f.serverCores,
          'flood driver cores': f.floodDriverCores,
        });
        results.push({ name: `${kind}_kept`, value: f.kept, unit: 'ratio' });
        results.push({ name: `${kind}_valid_non2xx`, value: f.validNon2xx, unit: 'requests' });
        say(
          `${kind}: valid traffic kept ${(f.kept * 100).toFixed(0)}% (${fmt(f.aloneReqPerS)} → ${fmt(f.floodedReqPerS)} req/s) under ${fmt(f.floodReqPerS)} flood req/s`,
        );
      } finally {
        await db.drop();
      }
    }

    if (want('b-large-50m') || want('reports-50m') || want('funnel-50m') || want('erasure-50m')) {
      const total = Number(process.env.BENCH_PRELOAD_ROWS ?? 50_000_000);
      const db = await freshDatabase(pg.url);
      let projectId = '';
      let preloaded = { projectId: '', botId: '' };
      try {
        const prepare = async (ids: { projectId: string; botId: string }) => {
          projectId = ids.projectId;
          preloaded = ids;
          say(`preloading ${fmt(total)} rows of the project over the previous and the current month…`);
          const started = performance.now();
          await preload(db, ids, total);
          say(`preloaded in ${fmt((performance.now() - started) / 1000)} s`);
        };
        const f = await botApiScenario(
          `b-large-50m (b-large on a table preloaded with ${fmt(total / 1e6)}M rows over two months)`,
          db,
          { ...o, events: 1000, connections: conns, prepare },
        );
        rows.push(figuresRow(f, ceilingRowsPerS));
        results.push({ name: 'b-large-50m_events', value: Math.round(f.eventsPerS), unit: 'events/s' });
        if (largeEventsPerS !== null)
          results.push({ name: 'b-large-50m_ratio_to_b-large', value: f.eventsPerS / largeEventsPerS, unit: 'ratio' });
        say(`b-large-50m: ${fmt(f.eventsPerS)} events/s`);
        if (want('reports-50m')) {
          const r = await reports50m(db, projectId, say);
          rows.push(r.row);
          results.push(...r.results);
        }
        if (want('funnel-50m')) {
          const r = await funnel50m(db, projectId, say);
          rows.push(r.row);
          results.push(...r.results);
        }
        if (want('erasure-50m')) {
          // Each of the three runs starts right after a checkpoint: after one, the first write to each page of the
          // 50M-row table's unique index logs the whole page, so a run's cost depends on how long ago the last was.
          const checkpoint = async () => {
            await db.sql`CHECKPOINT`;
          };
          const plain = () =>
            botApiScenario('erasure-50m control (b-large on the same table, no erasure)', db, {
              ...o,
              events: 1000,
              connections: conns,
              prepare: checkpoint,
            });
          const settled = await settle(db);
          const before = await plain();
          const e = await botApiScenario(
            `erasure-50m (b-large on the same table while ${ERASURE_USERS.toLocaleString('en-US')} users × 10 events are erased)`,
            db,
            {
              ...o,
              events: 1000,
              connections: conns,
              // The erased users are the preloaded project's, while b-large sends to a project of its own.
              prepare: async () => {
                await plantAndRequest(db, preloaded, total);
                await checkpoint();
              },
              finish: () => awaitErasure(db, say),
            },
          );
          const after = await plain();
          await settled.resume();
          for (const r of [before, e, after]) rows.push(figuresRow(r, ceilingRowsPerS));
          const beside = e.eventsPerS / before.eventsPerS;
          const later = after.eventsPerS / before.eventsPerS;
          const seconds = Number(e.extra?.['erasure s'] ?? Number.NaN);
          results.push({ name: 'erasure-50m_seconds', value: seconds, unit: 's' });
          results.push({ name: 'erasure-50m_b-large_beside_ratio', value: beside, unit: 'ratio' });
          results.push({ name: 'erasure-50m_b-large_after_ratio', value: later, unit: 'ratio' });
          say(
            `erasure-50m: done in ${seconds.toFixed(0)} s (goal < 60 s, at most 600 s); b-large beside it ${beside.toFixed(2)}× the run before it (goal ≥ 0.9×), after it ${later.toFixed(2)}× (goal ≥ 0.95×); ${fmt(before.eventsPerS)}, ${fmt(e.eventsPerS)}, ${fmt(after.eventsPerS)} events/s`,
          );
        }
      } finally {
        await db.drop();
      }
    }

    let edRows: Row[] = [];
    if (want('ed25519')) {
      const e = ed25519Bench();
      edRows = e.rows;
      results.push({ name: 'ed25519_node_crypto', value: Math.round(e.nodeUncached), unit: 'checks/s/core' });
      results.push({ name: 'ed25519_noble', value: Math.round(e.nobleUncached), unit: 'checks/s/core' });
      results.push({ name: 'ed25519_cached', value: Math.round(e.cached), unit: 'checks/s/core' });
    }

    const report = [
      '',
      ...out.slice(0, 2),
      '',
      table(
        'Throughput (events/s of 2xx responses; cores = CPU seconds per second)',
        rows,
        Object.keys(
          figuresRow(
            {
              name: '',
              requestsPerS: 0,
              eventsPerS: 0,
              p50Ms: 0,
              p99Ms: 0,
              failed: 0,
              rowsPerCommit: 0,
              commitMs: 0,
              serverCores: 0,
              mainThreadCores: 0,
              mainThreadWaitCores: 0,
              postgresCores: 0,
              loadGeneratorCores: 0,
              machineCores: 0,
              peakRssMiB: 0,
              tableRowsBefore: 0,
              tableRowsAfter: 0,
              statuses: {},
              shedAtDoor: 0,
            },
            1,
          ),
        ),
      ),
      floodRows.length > 0
        ? table('Floods (valid traffic alone, then beside the flood; same service, same run)', floodRows)
        : '',
      edRows.length > 0 ? table('initData checks per second on one core (ed25519)', edRows) : '',
      resultLines(results),
    ].join('\n');
    process.stdout.write(`${report}\n`);
  } finally {
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
