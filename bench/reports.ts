// reports-50m: the report aggregator catches up on the preloaded table of b-large-50m (10 million users, with
// campaigns, payments and refunds), as on a first start over existing history, then each report is asked for the
// last 90 days (the sessions report too: every other visit of the preload is a mini-app session; retention by day
// and by week). The reports read
// the aggregates alone, so their time should not depend on the events behind them.
import { createLogger } from '../src/base/log.js';
import { ReportAggregator } from '../src/reports/aggregator.js';
import { FOLD_VERSION } from '../src/reports/fold-sql.js';
import { ReportStore } from '../src/reports/queries.js';
import type { Database } from './lib/env.js';
import { fmt, type Result, type Row } from './lib/report.js';

const GOAL_MS = 200;
const RUNS = 9;

export async function reports50m(
  db: Database,
  projectId: string,
  say: (s: string) => void,
): Promise<{ row: Row; results: Result[] }> {
  const [{ n: stored }] = await db.sql<{ n: number }[]>`SELECT count(*)::float8 AS n FROM events`;
  say(`reports-50m: folding ${fmt(stored!)} stored events into the report aggregates…`);
  // As on a first start over existing history (the service's own aggregator began at its start, after the table
  // was empty, and the preload wrote the past since).
  await db.sql`TRUNCATE report_day_types, report_days, report_active, report_users, report_payments,
                        report_revenue_days, report_campaign_days, report_campaign_revenue, report_sessions,
                        report_session_days, report_session_platforms, report_session_lengths, report_session_users,
                        report_retention, report_retention_weeks, report_active_weeks`;
  // A rebuild from the events (docs/operations.md): everything up to now is read from the table, and the summaries
  // of commits up to now go, their events with the rest.
  await db.sql.begin(async (tx) => {
    await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true)`;
    await tx`UPDATE report_watermark SET received_before = '-infinity', summaries_since = now()`;
    await tx`DELETE FROM report_summaries`;
  });
  const aggregator = new ReportAggregator(db.sql, { everyMs: 1000, historyLagMs: 0 }, createLogger('error'));
  const started = performance.now();
  await aggregator.catchUp();
  const catchUpS = (performance.now() - started) / 1000;
  const [{ n: counted }] = await db.sql<{ n: number }[]>`
    SELECT coalesce(sum(events), 0)::float8 AS n FROM report_day_types WHERE project_id = ${projectId}`;
  say(
    `reports-50m: folded in ${fmt(catchUpS)} s (${fmt(stored! / catchUpS)} events/s); the reports count ${fmt(counted!)}`,
  );

  const store = new ReportStore(db.sql);
  const day = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString().slice(0, 10);
  const range = { from: day(89), to: day(0) };
  const reports = {
    daily: () => store.daily(projectId, range),
    revenue: () => store.revenue(projectId, range, true),
    campaigns: () => store.campaigns(projectId, range, 100),
    sessions: () => store.sessions(projectId, range),
    retention: () => store.retention(projectId, range, 'day', null),
    retention_week: () => store.retention(projectId, range, 'week', null),
  };
  const row: Row = {
    scenario: `reports-50m (each report over 90 days, median of ${RUNS}; aggregates of ${fmt(counted!)} events)`,
    'catch-up events/s': stored! / catchUpS,
  };
  const results: Result[] = [
    { name: 'reports-50m_catchup_events_per_s', value: Math.round(stored! / catchUpS), unit: 'events/s' },
  ];
  for (const [name, ask] of Object.entries(reports)) {
    await ask();
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await ask();
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(RUNS / 2)]!;
    row[`${name} ms`] = median;
    results.push({ name: `reports-50m_${name}_ms`, value: Number(median.toFixed(1)), unit: 'ms' });
    say(`reports-50m: ${name} ${median.toFixed(1)} ms at the median (goal < ${GOAL_MS} ms)`);
  }
  const sessions = await reports.sessions();
  say(
    `reports-50m: ${fmt(sessions.reduce((a, d) => a + d.sessions, 0))} mini-app sessions of ${fmt(sessions.reduce((a, d) => a + d.users, 0))} user-days in the range`,
  );
  const shown = await reports.campaigns();
  say(
    `reports-50m: ${shown.length} campaigns, ${fmt(shown.reduce((a, c) => a + c.activeUsers, 0))} active users in all`,
  );
  return { row, results };
}
