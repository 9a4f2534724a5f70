// funnel-50m: the lake catches up on the preloaded table of b-large-50m (50 million events of 10 million users, as on
// a first start over existing history), then a three-step funnel over the last 90 days is asked of it: app_open, a
// screen_view with a property filter, app_close, within an hour. The export's catch-up rate is measured on the way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/base/log.js';
import { LakeEngine } from '../src/lake/engine.js';
import { LakeExporter, readLake } from '../src/lake/exporter.js';
import { readLakeId } from '../src/lake/files.js';
import { FunnelReader } from '../src/reports/funnel.js';
import { checkFunnel } from '../src/reports/funnel-request.js';
import type { Database } from './lib/env.js';
import { fmt, median, type Result, type Row } from './lib/report.js';

const GOAL_MS = 1000;
const RUNS = 5;

export async function funnel50m(
  db: Database,
  projectId: string,
  say: (s: string) => void,
): Promise<{ row: Row; results: Result[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-bench-lake-'));
  const temp = mkdtempSync(join(tmpdir(), 'tg-bench-lake-tmp-'));
  // As the service builds them, at the defaults (LAKE_THREADS 2, LAKE_MEMORY_MB 1024; the export on one thread).
  const writing = new LakeEngine({ threads: 1, memoryMb: 1024, tempDir: join(temp, 'export'), tempMaxMb: 16_384 });
  const reading = new LakeEngine({ threads: 2, memoryMb: 1024, tempDir: join(temp, 'query'), tempMaxMb: 16_384 });
  try {
    const [{ n: stored }] = await db.sql<{ n: number }[]>`SELECT count(*)::float8 AS n FROM events`;
    say(`funnel-50m: exporting ${fmt(stored!)} stored events to the lake…`);
    const exporter = new LakeExporter(
      db.sql,
      writing,
      { dir, everyMs: 3_600_000, maxRows: 2_000_000, holdBackMs: 0, retentionMonths: null, usersDays: 7 },
      createLogger('error'),
    );
    const started = performance.now();
    for (;;) {
      const t = await exporter.turn();
      const lake = await readLake(db.sql, readLakeId(dir)!);
      if (t === 'idle' && lake?.historyFrom === '-infinity') break;
    }
    const catchUpS = (performance.now() - started) / 1000;
    say(`funnel-50m: exported in ${fmt(catchUpS)} s (${fmt(stored! / catchUpS)} events/s)`);

    const day = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString().slice(0, 10);
    const checked = checkFunnel(
      {
        steps: [
          { eventName: 'app_open' },
          { eventName: 'screen_view', where: { property: 'variant', op: '=', value: 'a' } },
          { eventName: 'app_close' },
        ],
        from: day(89),
        to: day(0),
        windowS: 3600,
      },
      new Date(),
    );
    if (!checked.ok) throw new Error(checked.message);
    const reader = new FunnelReader(db.sql, reading, { dir, timeoutMs: 600_000, tempDir: temp });
    const first = await reader.funnel(projectId, checked.request);
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await reader.funnel(projectId, checked.request);
      times.push(performance.now() - t);
    }
    const medianMs = median(times);
    say(
      `funnel-50m: ${medianMs.toFixed(0)} ms at the median of ${RUNS} (goal < ${GOAL_MS} ms); users per step ${first.steps.map((s) => fmt(s.users)).join(' → ')}`,
    );
    return {
      row: {
        scenario: `funnel-50m (3 steps over 90 days of ${fmt(stored! / 1e6)}M events, median of ${RUNS})`,
        'funnel ms': medianMs,
        'export events/s': stored! / catchUpS,
      },
      results: [
        { name: 'funnel-50m_ms', value: Math.round(medianMs), unit: 'ms' },
        { name: 'lake_catchup_events_per_s', value: Math.round(stored! / catchUpS), unit: 'events/s' },
      ],
    };
  } finally {
    writing.close();
    reading.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(temp, { recursive: true, force: true });
  }
}
