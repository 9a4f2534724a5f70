// Schema migrations (src/db/migrations/), applied at start under an advisory lock so that several instances
// starting together apply each exactly once.
import type { Sql } from './connect.js';
import { MIGRATIONS } from './migrations/index.js';

const LOCK_KEY = 7_240_311_905; // arbitrary, constant: the advisory lock of this service's migrations

export async function migrate(sql: Sql): Promise<number[]> {
  const applied: number[] = [];
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const done = new Set(
      (await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version),
    );
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
  });
  return applied;
}

export async function schemaReady(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ v: number | null }[]>`SELECT max(version) AS v FROM schema_migrations`;
  return row?.v === MIGRATIONS[MIGRATIONS.length - 1]!.version;
}
