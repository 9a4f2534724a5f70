// A fresh database per test file on the suite's PostgreSQL, so files run in parallel untouched
// by each other.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { connect, type Sql } from '../../src/db/connect.js';

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const base = inject('databaseUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = connect(base, { max: 1, name: 'tg-ingest tests' });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, { max: 2, name: 'tg-ingest tests' });
  return {
    url,
    sql,
    async drop() {
      await sql.end({ timeout: 1 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end({ timeout: 1 });
    },
  };
}

/** Whether the reports have folded everything committed: no report summary waits, and no row no summary holds. */
export async function reportsCaughtUp(sql: TestDatabase['sql']): Promise<boolean> {
  const [r] = await sql<{ waiting: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM report_summaries) OR EXISTS (SELECT 1 FROM events WHERE summarized IS NOT TRUE)
      AS waiting`;
  return !r!.waiting;
}
