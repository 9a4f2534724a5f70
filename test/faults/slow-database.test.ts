// A database that is alive but stuck (a lock held on `events` by another session): the writer holds
// a bounded number of rows, answers everything else 503 at once, cancels commits that outlive
// WRITE_TIMEOUT_MS, and every answer tells the truth: a 202's rows are committed, a 503's are not.
// Service resumes when the lock goes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/connect.js';
import { admin, call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let locker: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    RATE_LIMIT_BURST: '1000000',
    WRITER_MAX_QUEUED_ROWS: '1000',
    WRITE_TIMEOUT_MS: '3000',
    DB_WRITER_CONNECTIONS: '2',
  });
  locker = connect(db.url, { max: 1, name: 'test locker' });
});
afterAll(async () => {
  await locker?.end();
  await srv?.stop();
  await db?.drop();
});

/** Holds `events` locked, in a transaction of its own, until the function it returns is called. */
async function lockEvents(): Promise<() => Promise<void>> {
  let release: () => void = () => undefined;
  const unlocked = new Promise<void>((r) => (release = r));
  const lock = locker.begin(async (tx) => {
    await tx`LOCK TABLE events IN ACCESS EXCLUSIVE MODE`;
    await unlocked;
  });
  await new Promise((r) => setTimeout(r, 100));
  return async () => {
    release();
    await lock;
  };
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

describe('a stuck database', () => {
  it('bounds what the writer holds, answers 503 at once past it, and never lies about a commit', async () => {
    const p = await provision(srv.url);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);

    const answers: { status: number; ids: string[]; ms: number; retryAfter: string | null; error?: string }[] = [];
    let heldRows = 0;
    const unlock = await lockEvents();

    const until = Date.now() + 4000;
    const client = async () => {
      while (Date.now() < until) {
        const events = Array.from({ length: 100 }, () => serverEvent());
        const started = performance.now();
        const r = await postBotApi(srv.url, p.token, { events });
        answers.push({
          status: r.status,
          ids: events.map((e) => e.eventId),
          ms: performance.now() - started,
          retryAfter: r.headers.get('retry-after'),
          error: r.body?.error,
        });
        if (r.status !== 202) await new Promise((res) => setTimeout(res, 20));
      }
    };
    const scraper = (async () => {
      while (Date.now() < until) {
        heldRows = Math.max(
          heldRows,
          metric((await admin(srv.url, 'GET', '/metrics')).text, 'tg_ingest_writer_queued_rows'),
        );
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await Promise.all([...Array.from({ length: 24 }, client), scraper]);
    await unlock();

    // Bounded: at most WRITER_MAX_QUEUED_ROWS held (plus the one request that found the writer empty).
    expect(heldRows).toBeGreaterThan(0);
    expect(heldRows).toBeLessThanOrEqual(1100);
    const refused = answers.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status !== 202 && a.status !== 503)).toEqual([]);
    expect(refused.every((a) => a.retryAfter !== null)).toBe(true);
    // Shed at once: most refusals came without waiting on the database.
    expect(refused.filter((a) => a.error === 'overloaded' && a.ms < 500).length).toBeGreaterThan(0);
    // Nobody waited for the lock without bound.
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(8000);

    // Service resumes, for a client that honours Retry-After.
    const resumeBy = Date.now() + 5000;
    let after = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    while (after.status === 503 && Date.now() < resumeBy) {
      await new Promise((r) => setTimeout(r, Number(after.headers.get('retry-after')) * 1000));
      after = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    }
    expect(after.status).toBe(202);

    // The truth of every answer.
    const stored = new Set(
      (await db.sql<{ event_id: string }[]>`SELECT event_id FROM events WHERE project_id = ${p.projectId}`).map(
        (r) => r.event_id,
      ),
    );
    for (const a of answers) {
      const present = a.ids.filter((id) => stored.has(id)).length;
      expect(present, `a ${a.status} (${a.error ?? ''}) after ${Math.round(a.ms)} ms`).toBe(
        a.status === 202 ? a.ids.length : 0,
      );
    }
  }, 60_000);

  it('never sheds a closed-loop client: 200 connections each waiting for its answer from a slow database all get 202', async () => {
    const p = await provision(srv.url);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 1100));
    const shedBefore = metric((await admin(srv.url, 'GET', '/metrics')).text, 'tg_ingest_shed_requests_total');
    // Every commit takes 300 ms: requests wait far past the shedding bound, and are answered all the while.
    await db.sql.unsafe(`
      CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
      CREATE TRIGGER slow_commit AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION slow_commit();`);
    try {
      // Each client sends its next request once the last is answered: its requests in hand never outnumber it.
      const statuses: number[] = [];
      const until = Date.now() + 3000;
      const client = async () => {
        do statuses.push((await postBotApi(srv.url, p.token, { events: [serverEvent(), serverEvent()] })).status);
        while (Date.now() < until);
      };
      await Promise.all(Array.from({ length: 200 }, client));
      const shedAfter = metric((await admin(srv.url, 'GET', '/metrics')).text, 'tg_ingest_shed_requests_total');
      expect(shedAfter - shedBefore).toBe(0);
      // Several rounds each: answers kept coming while they waited.
      expect(statuses.length).toBeGreaterThanOrEqual(600);
      expect(statuses.filter((st) => st !== 202)).toEqual([]);
    } finally {
      await db.sql.unsafe('DROP TRIGGER slow_commit ON events; DROP FUNCTION slow_commit()');
    }
  }, 60_000);

  it('sheds at the door while arrivals outpace a stuck writer: 503 with Retry-After at once, on both endpoints, nothing read or stored; then lets requests in again', async () => {
    const p = await provision(srv.url);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    // More than a second after the last test's shedding stopped, so this one starts afresh.
    await new Promise((r) => setTimeout(r, 1100));
    const shedBefore = metric((await admin(srv.url, 'GET', '/metrics')).text, 'tg_ingest_shed_requests_total');

    const unlock = await lockEvents();
    // An open-loop client: a request every 5 ms, none waiting for the one before. The writer's two connections wait
    // on the lock, so the backlog grows tick after tick while its wait passes SHED_QUEUE_DELAY_MS: that is overload,
    // and the next arrivals are turned away. (A closed-loop client's backlog would not grow: it is never shed.)
    let firstSettled = false;
    const waiting: Promise<unknown>[] = [];
    let shed: { status: number; body: { error?: string }; headers: Headers; ms: number } | null = null;
    let shedEvents: ReturnType<typeof serverEvent>[] = [];
    const stopAt = Date.now() + 2500;
    while (shed === null && Date.now() < stopAt) {
      const events = [serverEvent(), serverEvent()];
      const started = performance.now();
      waiting.push(
        postBotApi(srv.url, p.token, { events }).then((r) => {
          if (r.status === 503 && r.body.error === 'overloaded' && shed === null) {
            shed = { ...r, ms: performance.now() - started };
            shedEvents = events;
          }
          return r;
        }),
      );
      await new Promise((r) => setTimeout(r, 5));
    }
    const first = Promise.all(waiting.slice(0, 2)).finally(() => (firstSettled = true));
    await new Promise((r) => setTimeout(r, 50));
    const found = shed as { status: number; body: { error?: string }; headers: Headers; ms: number } | null;
    // Answered at once, while the requests ahead of it still wait for the database.
    expect(found).not.toBeNull();
    expect(firstSettled).toBe(false);
    expect(found!.ms).toBeLessThan(500);
    expect(found!.headers.get('retry-after')).toBe('1');
    expect(found!.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);

    // On webapp too, readable by the mini-app's browser (CORS), before its body (here not even valid) is read.
    const webapp = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example.com' },
      body: 'not json',
    });
    expect(firstSettled).toBe(false);
    expect(webapp.status).toBe(503);
    expect(webapp.body.error).toBe('overloaded');
    expect(webapp.headers.get('retry-after')).toBe('1');
    expect(webapp.headers.get('access-control-allow-origin')).toBe('*');
    expect(webapp.headers.get('access-control-expose-headers')).toContain('Retry-After');
    const shedAfter = metric((await admin(srv.url, 'GET', '/metrics')).text, 'tg_ingest_shed_requests_total');
    expect(shedAfter - shedBefore).toBeGreaterThanOrEqual(2);

    await unlock();
    await first;
    await Promise.all(waiting);
    // The backlog gone, requests are let in again.
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    const [{ n }] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM events WHERE event_id IN ${db.sql(shedEvents.map((e) => e.eventId))}`;
    expect(n).toBe(0);
  }, 60_000);
});
