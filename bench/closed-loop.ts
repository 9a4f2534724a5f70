// The closed-loop sweep: autocannon at 1,000 and 2,000 connections on bot_api and 1,000 sessions on webapp, each
// beside its 100-connection baseline in the same round, the order turning from round to round. A closed-loop client
// can never hold more requests than it has connections, so the service must answer all of them (no 503) and accept
// at least 0.95× of what 100 connections get.
import { type Database, freshDatabase } from './lib/env.js';
import { fmt, median, type Result } from './lib/report.js';
import { botApiScenario, type Figures, type RunOptions, webappScenario } from './scenarios.js';

export const SWEEP = ['b-small-1000', 'b-small-2000', 'a-small-1000'] as const;
export type SweepName = (typeof SWEEP)[number];

interface Run {
  name: SweepName | 'b-small' | 'a-small';
  go: (db: Database) => Promise<Figures>;
}

export interface Sweep {
  figures: Figures[];
  results: Result[];
  lines: string[];
}

export async function closedLoopSweep(
  serverUrl: string,
  wanted: SweepName[],
  o: RunOptions & { rounds: number; env: Record<string, string> },
): Promise<Sweep> {
  const bot =
    (connections: number): Run['go'] =>
    (db) =>
      botApiScenario(`closed loop: b-small at ${fmt(connections)} connections`, db, {
        ...o,
        events: 10,
        connections,
        env: o.env,
      });
  const webapp =
    (connections: number): Run['go'] =>
    (db) =>
      webappScenario(`closed loop: a-small at ${fmt(connections)} connections, 1000 sessions`, db, {
        ...o,
        events: 10,
        connections,
        users: 1000,
        env: o.env,
      });
  const groups: { base: Run; runs: Run[] }[] = [];
  const botRuns = wanted
    .filter((n) => n.startsWith('b-'))
    .map((n) => ({
      name: n,
      go: bot(n === 'b-small-1000' ? 1000 : 2000),
    }));
  if (botRuns.length > 0) groups.push({ base: { name: 'b-small', go: bot(100) }, runs: botRuns });
  if (wanted.includes('a-small-1000'))
    groups.push({
      base: { name: 'a-small', go: webapp(100) },
      runs: [{ name: 'a-small-1000', go: webapp(1000) }],
    });
  const figures: Figures[] = [];
  const ratios = new Map<string, number[]>();
  /** 503s of the runs at many connections: shedding's, or a bound's (a full writer or lane): either fails the goal. */
  const answered503 = new Map<string, number>();
  const lines: string[] = [];
  /** a-small-1000 against b-small of the same round too, when both ran. */
  const toBotApi: number[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    let botBase: Figures | undefined;
    for (const g of groups) {
      const all = [g.base, ...g.runs];
      // Turned each round: whatever drifts within a round falls on each in turn.
      const order = all.map((_, i) => all[(i + round - 1) % all.length]!);
      const got = new Map<string, Figures>();
      for (const run of order) {
        const db = await freshDatabase(serverUrl);
        try {
          const f = await run.go(db);
          f.name = `${f.name}, round ${round}`;
          figures.push(f);
          got.set(run.name, f);
        } finally {
          await db.drop();
        }
      }
      const base = got.get(g.base.name)!;
      if (g.base.name === 'b-small') botBase = base;
      const webapp1000 = got.get('a-small-1000');
      if (webapp1000 !== undefined && botBase !== undefined)
        toBotApi.push(webapp1000.requestsPerS / botBase.requestsPerS);
      for (const run of g.runs) {
        const f = got.get(run.name)!;
        const ratio = f.requestsPerS / base.requestsPerS;
        ratios.set(run.name, [...(ratios.get(run.name) ?? []), ratio]);
        const refused = (f.statuses['503'] ?? 0) + (base.statuses['503'] ?? 0);
        answered503.set(run.name, (answered503.get(run.name) ?? 0) + (f.statuses['503'] ?? 0));
        lines.push(
          `${run.name} round ${round}: ${fmt(f.requestsPerS)} req/s against ${g.base.name} ${fmt(base.requestsPerS)} (${ratio.toFixed(2)}×); answered 503: ${fmt(f.statuses['503'] ?? 0)}, shed at the door ${fmt(f.shedAtDoor)} with the warm-up (${g.base.name} ${fmt(base.statuses['503'] ?? 0)}); other non-2xx: ${fmt(f.failed - (f.statuses['503'] ?? 0))}${refused > 0 ? ' — 503s' : ''}`,
        );
      }
    }
  }
  const results: Result[] = [];
  for (const [name, rs] of ratios) {
    const base = name.startsWith('b-') ? 'b-small' : 'a-small';
    results.push({ name: `${name}_ratio_to_${base}`, value: median(rs), unit: 'ratio' });
    results.push({ name: `${name}_503`, value: answered503.get(name) ?? 0, unit: 'requests' });
    lines.push(
      `${name}: median ${median(rs).toFixed(2)}× ${base} over ${rs.length} rounds (${rs.map((r) => r.toFixed(2)).join(', ')}; goal ≥ 0.95×), ${fmt(answered503.get(name) ?? 0)} answered 503 (goal 0)`,
    );
  }
  if (toBotApi.length > 0) {
    results.push({ name: 'a-small-1000_ratio_to_b-small', value: median(toBotApi), unit: 'ratio' });
    lines.push(`a-small-1000: median ${median(toBotApi).toFixed(2)}× b-small of the same rounds`);
  }
  return { figures, results, lines };
}
