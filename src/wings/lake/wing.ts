// The lake: every stored event written as Parquet to EXPORT_DIR by one instance at a time, its status, its part of
// every erasure, and the funnels that read it with the embedded columnar engine.
import { join } from 'node:path';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { LakeEngine } from '../../lake/engine.js';
import { lakeErasure } from '../../lake/erasure.js';
import { LakeExporter } from '../../lake/exporter.js';
import { FunnelReader } from '../../reports/funnel.js';
import type { Shared, Wing } from '../wing.js';
import { lakeRoutes } from './routes.js';
import { lakeSchemas } from './schemas.js';

/** Users snapshots kept per project: a week of them. */
const USERS_DAYS = 7;
/** The main thread's share of time busy, over the last second, past which ingestion has the process. */
const BUSY_UTILIZATION = 0.5;

/** Whether the main thread (ingestion's front and writer) was busy more than BUSY_UTILIZATION of the last second. */
function busyMainThread(): { busy: () => boolean; stop: () => void } {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  let utilization = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
  }, 1000);
  timer.unref();
  return { busy: () => utilization > BUSY_UTILIZATION, stop: () => clearInterval(timer) };
}

export function lakeWing(s: Shared): Wing {
  const dir = s.config.exportDir;
  const temp = join(s.config.dataDir, 'lake-tmp');
  // Export and queries each in an engine of their own: a funnel never waits for an export's threads, and the
  // export takes one core at most, so ingestion keeps the other.
  const writing = new LakeEngine({
    threads: 1,
    memoryMb: s.config.lakeMemoryMb,
    tempDir: join(temp, 'export'),
    tempMaxMb: s.config.lakeTempMaxMb,
  });
  const reading = new LakeEngine({
    threads: s.config.lakeThreads,
    memoryMb: s.config.lakeMemoryMb,
    tempDir: join(temp, 'query'),
    tempMaxMb: s.config.lakeTempMaxMb,
  });
  s.hooks.erasureParts.push(lakeErasure(dir, writing, s.log));
  const load = busyMainThread();
  const exporter =
    dir === null
      ? null
      : new LakeExporter(
          s.sql,
          writing,
          {
            dir,
            everyMs: s.config.exportEveryMs,
            maxRows: s.config.exportMaxRows,
            holdBackMs: s.config.writeTimeoutMs,
            retentionMonths: s.config.eventsRetentionMonths,
            usersDays: USERS_DAYS,
            busy: load.busy,
          },
          s.log,
        );
  const funnels =
    dir === null ? null : new FunnelReader(s.sql, reading, { dir, timeoutMs: s.config.funnelTimeoutMs, tempDir: temp });
  if (exporter !== null) s.metrics.lakeLag(() => exporter.lagSeconds);
  return {
    name: 'lake',
    schemas: lakeSchemas(),
    routes: lakeRoutes(s.projects, s.guard, { sql: s.sql, dir, exporter, funnels, tempDir: temp }),
    start: () => exporter?.start(),
    stop: async () => {
      await exporter?.stop();
      load.stop();
      writing.close();
      reading.close();
    },
  };
}
