// The lake: every stored event written as Parquet to EXPORT_DIR by one instance at a time, its status, its part of
// every erasure, and the funnels that read it with the embedded columnar engine.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '../../db/connect.js';
import { LakeEngine } from '../../lake/engine.js';
import { lakeErasure } from '../../lake/erasure.js';
import { LakeExporter } from '../../lake/exporter.js';
import { FunnelReader } from '../../reports/funnel.js';
import type { Shared, Wing } from '../wing.js';
import { lakeRoutes } from './routes.js';
import { lakeSchemas } from './schemas.js';

/** How long a stop waits for the export under way before it ends the exporter's connection. */
const STOP_GRACE_MS = 5000;
/** Users snapshots kept per project: a week of them. */
const USERS_DAYS = 7;
/** The machine's share of CPU time busy, over the last second, past which ingestion has it. */
const BUSY_SHARE = 0.7;

/**
 * Whether the machine's cores were busy more than BUSY_SHARE of the last second (/proc/stat: the service, its
 * workers and a PostgreSQL beside it all count; the main thread alone is a small part of ingestion's work). Where
 * /proc/stat cannot be read, never busy.
 */
function busyMachine(): { busy: () => boolean; stop: () => void } {
  const read = (): { idle: number; total: number } | null => {
    try {
      const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal: idle and iowait are the idle time.
      return { idle: cpu[3]! + (cpu[4] ?? 0), total: cpu.slice(0, 8).reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  let last = read();
  let share = 0;
  const timer = setInterval(() => {
    const now = read();
    if (now !== null && last !== null && now.total > last.total)
      share = 1 - (now.idle - last.idle) / (now.total - last.total);
    last = now;
  }, 1000);
  timer.unref();
  return { busy: () => share > BUSY_SHARE, stop: () => clearInterval(timer) };
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
  // Sampled only where there is a lake to export.
  const load = dir === null ? null : busyMachine();
  // The exporter's own connection: a turn holds one for its whole unit of work, and it must never take one of the
  // pool's, which credentials and allowances are read through, nor share the pool's reconnects after an outage.
  const lakeSql = dir === null ? null : connect(s.databaseUrl, { max: 1, name: 'tg-ingest lake' });
  const exporter =
    dir === null || lakeSql === null || load === null
      ? null
      : new LakeExporter(
          lakeSql,
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
    routes: lakeRoutes(s.projects, s.guard, { sql: s.sql, dir, funnels }),
    start: () => exporter?.start(),
    stop: async () => {
      // A turn still running after a grace (a long statement, a connection that died under it) is not waited for: its
      // connection is ended, and the stop goes on without it.
      const grace = (ms: number) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        return {
          wait: new Promise<void>((r) => {
            timer = setTimeout(r, ms);
          }),
          clear: () => clearTimeout(timer),
        };
      };
      const first = grace(STOP_GRACE_MS);
      await Promise.race([exporter?.stop(), first.wait]);
      first.clear();
      const ending = grace(2000);
      await Promise.race([lakeSql?.end({ timeout: 1 }), ending.wait]);
      ending.clear();
      load?.stop();
      writing.close();
      reading.close();
    },
  };
}
