// Heavy batches are not a backlog. Load shedding reads how long requests wait on something other than their own
// rows (src/writer/group-commit.ts): a commit's time on a request's own rows, up to 0.1 ms a row, is service. So
// clients sending 1000-event batches one after another, each commit slower than the shedding bound (BATCH_MAX_WAIT_MS
// + SHED_QUEUE_DELAY_MS, 55 ms), no more clients than the writer has connections, are never shed. (A commit that stalls
// well past that, or requests waiting for a connection, are: test/faults/slow-database.test.ts.) Solo: it reads
// the event loop's delay, which another test file on the same two cores would add to.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  // One request per commit, as many clients as writer connections: nothing waits for a connection.
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '10000000', BATCH_MAX_ROWS: '1000', DB_WRITER_CONNECTIONS: '4' });
  // Every commit takes 60 ms more, as a 1000-event batch can on a busy database: with its rows, past the 55 ms bound,
  // and within the 100 ms its own 1000 rows are allowed. (80 ms more left too little room on a machine half as fast
  // per core, where b-large's commits of ~1,200 rows take 60-69 ms: one request in 75 was shed once.)
  await db.sql.unsafe(`
    CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(0.06); RETURN NULL; END $$;
    CREATE TRIGGER test_slow_commit AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION test_slow_commit()`);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

describe('heavy batches', () => {
  it('are let in while their own rows take longer to commit than the bound: 4 clients of 1000-event batches for 3 s, every answer 202', async () => {
    const p = await provision(srv.url);
    const statuses = new Map<number, number>();
    let stored = 0;
    const until = Date.now() + 3000;
    await Promise.all(
      Array.from({ length: 4 }, async (_, c) => {
        for (let r = 0; Date.now() < until; r++) {
          const events = Array.from({ length: 1000 }, (_, i) =>
            serverEvent({ eventId: randomUUID(), platformUserId: String(1000 + ((c * 7919 + r * 31 + i) % 5000)) }),
          );
          const res = await postBotApi(srv.url, p.token, { events });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 202) stored += 1000;
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ 202: expect.any(Number) });
    // Each commit took its 60 ms and more: the load was real.
    expect(statuses.get(202)).toBeGreaterThan(20);
    const [{ n }] = await db.sql<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`;
    expect(n).toBe(stored);
  }, 60_000);
});
