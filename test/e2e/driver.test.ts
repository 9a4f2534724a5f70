// The database driver as scripts/patch-postgres.mjs leaves it, against a real PostgreSQL: what the service relies on
// when a connection is cut under it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** `p`, or a rejection naming `what` once `ms` have passed without it settling. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled in ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe('database driver', () => {
  it('hands a reserve queued behind a reserved connection that the server ends a new connection', async () => {
    const sql = connect(db.url, { max: 1, name: 'driver test' });
    try {
      // The only connection reserved and idle; a second reserve waits for it; then the server ends that connection.
      const holder = await sql.reserve();
      const [{ pid }] = await holder<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      const reserving = sql.reserve();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const [{ ended }] = await db.sql<{ ended: boolean }[]>`SELECT pg_terminate_backend(${pid}) AS ended`;
      expect(ended).toBe(true);
      // Unpatched, postgres.js 3.4.9 hands the waiting reserve to the reconnect, which drops it: it never settles.
      const reserved = await within(reserving, 10_000, 'the waiting reserve');
      const [{ pid: other }] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      expect(other).not.toBe(pid);
      reserved.release();
      expect((await within(sql`SELECT 1 AS one`, 10_000, 'a query after the release'))[0]).toEqual({ one: 1 });
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 40_000);
});
