// The database driver as scripts/patch-postgres.mjs leaves it, against a real PostgreSQL: what the service relies on
// when a connection is cut under it.
import { createServer, connect as netConnect, type Server } from 'node:net';
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

/** A free TCP port on the loopback, nothing listening on it. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** The test database over TCP at `port`, where nothing listens until `open()`: a database refusing connections. */
async function refusingDatabase(): Promise<{ url: string; open(): Promise<void>; close(): Promise<void> }> {
  const real = new URL(db.url);
  const target = Number(real.port || 5432);
  const port = await freePort();
  const url = new URL(db.url);
  url.search = '';
  url.port = String(port);
  let server: Server | null = null;
  return {
    url: url.toString(),
    open: () =>
      new Promise<void>((resolve) => {
        server = createServer((client) => {
          const upstream = netConnect(target, '127.0.0.1');
          client.pipe(upstream).pipe(client);
          client.on('error', () => upstream.destroy());
          upstream.on('error', () => client.destroy());
        });
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    close: () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  };
}

describe('database driver', () => {
  it('connects again once a database that refused connections takes them', async () => {
    const database = await refusingDatabase();
    const sql = connect(database.url, { max: 1, name: 'driver test', connectTimeoutS: 2 });
    try {
      await expect(within(sql`SELECT 1 AS one`, 10_000, 'a query while refused')).rejects.toMatchObject({
        code: 'ECONNREFUSED',
      });
      await database.open();
      // Unpatched, the refused connection stays "connecting" for ever, and a pool of one with it.
      expect((await within(sql`SELECT 1 AS one`, 10_000, 'a query once accepted'))[0]).toEqual({ one: 1 });
    } finally {
      await sql.end({ timeout: 1 });
      await database.close();
    }
  }, 40_000);

  it('rejects a reserve whose own connection is refused, and reserves again once the database takes connections', async () => {
    const database = await refusingDatabase();
    const sql = connect(database.url, { max: 1, name: 'driver test', connectTimeoutS: 2 });
    try {
      await expect(within(sql.reserve(), 10_000, 'a reserve while refused')).rejects.toMatchObject({
        code: 'ECONNREFUSED',
      });
      await database.open();
      const reserved = await within(sql.reserve(), 10_000, 'a reserve once accepted');
      expect((await reserved`SELECT 1 AS one`)[0]).toEqual({ one: 1 });
      reserved.release();
      expect((await within(sql`SELECT 2 AS two`, 10_000, 'a query after the release'))[0]).toEqual({ two: 2 });
    } finally {
      await sql.end({ timeout: 1 });
      await database.close();
    }
  }, 40_000);

  it('ends a transaction with its connection: its later statements never reach the next session', async () => {
    const sql = connect(db.url, { max: 1, name: 'driver test' });
    try {
      let late: unknown = null;
      const outcome = sql
        .begin(async (t) => {
          const [{ pid }] = await t<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          // Waits for the only connection, held by the transaction; answered on the next one once this is cut.
          const queued = sql`SELECT 2 AS two`.then((rows) => rows);
          await db.sql`SELECT pg_terminate_backend(${pid})`;
          await within(queued, 10_000, 'the query queued behind the transaction');
          late = await t`SELECT 1 AS one`.then(
            () => 'sent',
            (err: { code?: string }) => err.code,
          );
        })
        .then(
          () => 'committed',
          (err: { code?: string }) => err.code,
        );
      expect(await within(outcome, 15_000, 'the transaction')).not.toBe('committed');
      // Unfenced, the statement ran on the new session, outside any transaction.
      await expect.poll(() => late, { timeout: 10_000 }).toBe('CONNECTION_CLOSED');
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 40_000);

  it('gives a reserve queued behind a connection the server ends a new connection', async () => {
    const sql = connect(db.url, { max: 1, name: 'driver test' });
    try {
      // The only connection reserved and idle; a second reserve waits for it; then the server ends that connection.
      const holder = await sql.reserve();
      const [{ pid }] = await holder<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      const reserving = sql.reserve();
      const [{ ended }] = await db.sql<{ ended: boolean }[]>`SELECT pg_terminate_backend(${pid}) AS ended`;
      expect(ended).toBe(true);
      // Unpatched, postgres.js 3.4.9 hands the waiting reserve to the reconnect, which drops it: it never settles.
      const reserved = await within(reserving, 10_000, 'the waiting reserve');
      const [{ pid: other }] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      expect(other).not.toBe(pid);
      // The holder whose connection was cut holds nothing now: its queries do not reach the new holder's session, and
      // its release does not hand that connection to the pool.
      await expect(within(holder`SELECT 1 AS one`, 10_000, "the cut holder's query")).rejects.toMatchObject({
        code: 'CONNECTION_CLOSED',
      });
      holder.release();
      let pooled = false;
      const waiting = sql`SELECT 1 AS one`.then((rows) => {
        pooled = true;
        return rows;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(pooled).toBe(false);
      reserved.release();
      expect((await within(waiting, 10_000, 'a pool query after the release'))[0]).toEqual({ one: 1 });
      expect((await within(sql`SELECT 1 AS one`, 10_000, 'a query after the release'))[0]).toEqual({ one: 1 });
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 40_000);
});
