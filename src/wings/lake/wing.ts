// The lake: every stored event written as Parquet to EXPORT_DIR by one instance at a time, its status, its part of
// every erasure, and the funnels that read it with the embedded columnar engine.
import { join } from 'node:path';
import { LakeEngine } from '../../lake/engine.js';
import { lakeErasure } from '../../lake/erasure.js';
import { LakeExporter } from '../../lake/exporter.js';
import { FunnelReader } from '../../reports/funnel.js';
import type { Shared, Wing } from '../wing.js';
import { lakeRoutes } from './routes.js';
import { lakeSchemas } from './schemas.js';

/** Users snapshots kept per project: a week of them. */
const USERS_DAYS = 7;

export function lakeWing(s: Shared): Wing {
  const dir = s.config.exportDir;
  const temp = join(s.config.dataDir, 'lake-tmp');
  // Export and queries each in an engine of their own: a funnel never waits for an export's threads, and the
  // export takes one core at most, so ingestion keeps the other.
  const writing = new LakeEngine({ threads: 1, memoryMb: s.config.lakeMemoryMb, tempDir: join(temp, 'export') });
  const reading = new LakeEngine({
    threads: s.config.lakeThreads,
    memoryMb: s.config.lakeMemoryMb,
    tempDir: join(temp, 'query'),
  });
  s.hooks.erasureParts.push(lakeErasure(dir, writing, s.log));
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
      writing.close();
      reading.close();
    },
  };
}
