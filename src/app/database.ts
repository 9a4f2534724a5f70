// The database as the service starts on it: reachable, migrated, its partitions kept ahead (and
// trimmed by EVENTS_RETENTION_MONTHS) every hour, its connections watched.
import type { Config } from '../config/config.js';
import { connect, type Sql } from '../db/connect.js';
import { migrate } from '../db/migrate.js';
import { maintainPartitions } from '../db/partitions.js';
import { watchDatabase } from '../db/watch.js';
import type { Logger } from '../base/log.js';

export interface Database {
  sql: Sql;
  /** Stops the upkeep timers (not the connections). */
  stop(): void;
}

async function waitForDatabase(sql: Sql, log: Logger, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`SELECT 1`;
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      log.warn({ attempt, err: (err as Error).message }, 'database not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function openDatabase(databaseUrl: string, config: Readonly<Config>, log: Logger): Promise<Database> {
  const sql = connect(databaseUrl, { max: config.dbPoolSize, name: 'tg-ingest' });
  await waitForDatabase(sql, log);
  const applied = await migrate(sql);
  if (applied.length > 0) log.info({ versions: applied }, 'migrations applied');
  // Partitions exist well before rows need them; old ones go when EVENTS_RETENTION_MONTHS says so.
  const maintain = async () => {
    const m = await maintainPartitions(sql, config.eventsRetentionMonths);
    if (m.created.length + m.dropped.length > 0) log.info(m, 'event partitions maintained');
  };
  await maintain();
  const partitioner = setInterval(
    () =>
      maintain().catch((err: unknown) =>
        log.warn({ err: (err as Error).message }, 'maintaining event partitions failed'),
      ),
    3_600_000,
  );
  partitioner.unref();
  const unwatch = watchDatabase(sql, log);
  return {
    sql,
    stop() {
      clearInterval(partitioner);
      unwatch();
    },
  };
}
