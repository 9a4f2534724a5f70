// The lake read back with DuckDB equals the database row for row, none twice: after ingestion over HTTP, for history
// stored before the lake began (closed days joined into one file), after kill -9 at moments spread over the exports,
// after an erasure (the users snapshot too), after retention; an emptied directory is written again, a foreign one
// left alone.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, eraseAndWait, postBotApi, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer | undefined;
let p: Provisioned;
let q: Provisioned;
const lake = join(tmpdir(), `tg-lake-test-${randomUUID()}`);
const ENV = { EXPORT_DIR: lake, EXPORT_EVERY_MS: '1000', WRITE_TIMEOUT_MS: '1000', RATE_LIMIT_BURST: '100000' };

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, ENV);
  p = await provision(srv.url);
  q = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
  rmSync(lake, { recursive: true, force: true });
});

/** The lake's events as DuckDB reads them (Hive partitions), in a canonical text form per row. */
async function lakeRows(dir = lake): Promise<string[]> {
  const files = existsSync(join(dir, 'events'))
    ? readdirSync(join(dir, 'events'), { recursive: true, encoding: 'utf8' })
    : [];
  if (!files.some((f) => f.endsWith('.parquet'))) return [];
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  await c.run("SET TimeZone = 'UTC'");
  try {
    const r = await c.runAndReadAll(`
      SELECT project_id, date::VARCHAR AS date, bot_id, event_id, event_name, event_type,
        epoch_us(event_date)::VARCHAR AS event_date, epoch_us(received_at)::VARCHAR AS received_at,
        platform_user_id::VARCHAR AS platform_user_id, origin, channel, text,
        to_json(props_string)::VARCHAR AS ps, to_json(props_long)::VARCHAR AS pl, to_json(props_float)::VARCHAR AS pf,
        to_json(props_bool)::VARCHAR AS pb, tg::VARCHAR AS tg
      FROM read_parquet('${dir}/events/**/*.parquet', hive_partitioning = true, hive_types = {'project_id': VARCHAR, 'date': DATE})`);
    return r.getRowObjectsJson().map((row) => canonical(row as Record<string, unknown>));
  } finally {
    c.closeSync();
    duck.closeSync();
  }
}

/** The database's events in the same form. */
async function dbRows(): Promise<string[]> {
  const rows = await db.sql<Record<string, unknown>[]>`
    SELECT project_id::text, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, bot_id::text, event_id::text,
      event_name, event_type,
      (extract(epoch FROM event_date) * 1000000)::int8::text AS event_date,
      (extract(epoch FROM received_at) * 1000000)::int8::text AS received_at,
      platform_user_id::text, origin, channel, text,
      props_string::text AS ps, props_long::text AS pl, props_float::text AS pf, props_bool::text AS pb, tg::text AS tg
    FROM events`;
  return rows.map(canonical);
}

/** JSON text compared as values: DuckDB and PostgreSQL space and order keys differently. */
function canonical(r: Record<string, unknown>): string {
  const json = (v: unknown) => {
    if (v === null || v === undefined) return null;
    const o = JSON.parse(String(v)) as Record<string, unknown> | null;
    return o === null ? null : Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
  };
  return JSON.stringify({
    ...r,
    ps: json(r.ps),
    pl: json(r.pl),
    pf: json(r.pf),
    pb: json(r.pb),
    tg: json(r.tg),
  });
}

async function lakeEqualsDatabase(timeout = 30_000): Promise<void> {
  await expect
    .poll(
      async () => {
        const [l, d] = [await lakeRows(), await dbRows()];
        return (
          l.length === d.length && new Set(l).size === l.length && [...l].sort().join('\n') === [...d].sort().join('\n')
        );
      },
      { timeout, interval: 500 },
    )
    .toBe(true);
}

/** Rows of a dataset in the lake that name the user. */
async function inLake(dataset: 'events' | 'users', column: string, user: string): Promise<number> {
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  try {
    const r = await c.runAndReadAll(
      `SELECT count(*)::INT FROM read_parquet('${lake}/${dataset}/**/*.parquet') WHERE ${column} = ${user}`,
    );
    return Number(r.getRows()[0]![0]);
  } finally {
    c.closeSync();
    duck.closeSync();
  }
}

const status = async (projectId: string) => (await admin(srv!.url, 'GET', `/admin/projects/${projectId}/export`)).body;

function event(user: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    eventId: randomUUID(),
    eventName: 'purchase',
    eventType: 'payment',
    eventDate: '2026-11-20T10:00:00.123456Z',
    eventOrigin: 'custom',
    platformUserId: user,
    text: 'a "quoted", multi\nline text, with \\ and \u00e9',
    propsString: { plan: 'pro, "annual"', 'tg.start_param': 'spring' },
    propsLong: { seats: 3, big: 9007199254740991 },
    propsFloat: { price: 12.5 },
    propsBool: { trial: false },
    ...over,
  };
}

/** Rows as a writer would have stored them long ago (the lake reads them as history). */
async function storeOld(projectId: string, botId: string, rows: { user: number; at: string }[]): Promise<void> {
  const months = [...new Set(rows.map((r) => `${r.at.slice(0, 7)}-01`))];
  for (const m of months) await db.sql`SELECT tg_events_partition(${m}::date)`;
  await db.sql`
    INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at, platform_user_id,
      origin, channel, props_long, billed, summarized)
    SELECT ${projectId}::uuid, ${botId}::uuid, gen_random_uuid(), 'old', 'custom', at, at, u, 'custom', 'bot_api',
      jsonb_build_object('n', u), true, true
    FROM unnest(${db.sql.array(rows.map((r) => r.at))}::timestamptz[], ${db.sql.array(rows.map((r) => r.user))}::bigint[]) AS t(at, u)`;
}

describe('the lake', () => {
  it('holds every event stored over HTTP once, each column as stored, partitioned by project and day', async () => {
    const events = Array.from({ length: 300 }, (_, i) => event(String(1000 + (i % 40))));
    // Rows at the edges of what is stored: a date before year 1 in UTC, and a row of ~3 MiB (longer than a CSV
    // line the engine reads by default).
    events[0]!.eventDate = '0001-01-01T00:00:00+01:00';
    events[1]!.propsString = Object.fromEntries(
      Array.from({ length: 800 }, (_, k) => [`k${k}`, `"${'x'.repeat(4000)}`]),
    );
    for (let i = 0; i < 3; i++) {
      expect((await postBotApi(srv!.url, p.token, { events: events.slice(i * 100, i * 100 + 100) })).status).toBe(202);
      expect((await postBotApi(srv!.url, q.token, { events: [event('77', { propsString: { k: 'v' } })] })).status).toBe(
        202,
      );
    }
    await lakeEqualsDatabase();
    const s = await status(p.projectId);
    expect(s).toMatchObject({ enabled: true, historyDone: true });
    expect(s.files).toBeGreaterThan(0);
    expect(s.bytes).toBeGreaterThan(0);
    expect(Date.parse(s.watermark)).toBeGreaterThan(Date.now() - 30_000);
    const today = new Date().toISOString().slice(0, 10);
    expect(existsSync(join(lake, 'events', `project_id=${q.projectId}`, `date=${today}`))).toBe(true);
    // docs/lake.md's DuckDB example, as written there, against this lake: the database's counts.
    const doc = readFileSync(new URL('../../docs/lake.md', import.meta.url), 'utf8');
    const example = /```sql\n-- duckdb\n([^;]+);/.exec(doc)![1]!.replaceAll('EXPORT_DIR', lake);
    const duck = await DuckDBInstance.create(':memory:');
    const c = await duck.connect();
    const got = (await c.runAndReadAll(example)).getRowObjectsJson();
    c.closeSync();
    duck.closeSync();
    const want = await db.sql`
      SELECT project_id::text, (received_at AT TIME ZONE 'UTC')::date::text AS date, count(*)::text AS events,
        count(DISTINCT platform_user_id)::text AS users FROM events GROUP BY 1, 2 ORDER BY 1, 2`;
    expect(got.map((r) => ({ ...r, date: String(r.date) }))).toEqual(want.map((r) => ({ ...r })));
    const metrics = (await admin(srv!.url, 'GET', '/metrics')).text;
    expect(metrics).toMatch(/^tg_ingest_lake_lag_seconds \d/m);
  });

  it('exports history stored before the lake began, newest first, joining each closed day into one file', async () => {
    await srv!.stop();
    // Three days of history, many small windows (EXPORT_MAX_ROWS) per day; two older days that each fit one window,
    // whose one file becomes the day's.
    const day = (k: number) => new Date(Date.now() - k * 86_400_000).toISOString().slice(0, 10);
    const rows = [2, 3, 4, 7, 8].flatMap((k) =>
      Array.from({ length: k < 7 ? 1500 : 600 }, (_, i) => ({
        user: 5000 + (i % 300),
        at: `${day(k)}T${String(i % 24).padStart(2, '0')}:00:0${i % 10}.${i}Z`,
      })),
    );
    await storeOld(p.projectId, p.botId, rows);
    await db.sql`
      INSERT INTO users (project_id, messenger_user_id, username, first_seen, last_seen)
      SELECT ${p.projectId}::uuid, u, 'user' || u, now(), now() FROM unnest(ARRAY[1001, 5000, 5001]::bigint[]) AS u
      ON CONFLICT DO NOTHING`;
    rmSync(lake, { recursive: true, force: true });
    srv = await startServer(db.url, { ...ENV, EXPORT_MAX_ROWS: '1000' });
    await lakeEqualsDatabase(60_000);
    await expect.poll(async () => (await status(p.projectId)).historyDone, { timeout: 30_000 }).toBe(true);
    for (const k of [2, 3, 4, 7, 8]) {
      const dir = join(lake, 'events', `project_id=${p.projectId}`, `date=${day(k)}`);
      await expect
        .poll(() => readdirSync(dir).filter((f) => f.endsWith('.parquet')), { timeout: 30_000 })
        .toEqual([`c-${day(k)}.parquet`]);
    }
    await lakeEqualsDatabase();
    // The day's users snapshot, taken as the new lake began (once its closed days are made, on a turn of its own).
    await expect.poll(() => inLake('users', 'messenger_user_id', '5001').catch(() => 0), { timeout: 30_000 }).toBe(1);
  }, 180_000);

  it('after kill -9 at moments spread over the exports, holds every row once', async () => {
    const day = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
    await storeOld(
      q.projectId,
      q.botId,
      Array.from({ length: 20_000 }, (_, i) => ({
        user: 9000 + (i % 500),
        at: `${day}T10:00:00.${String(i).padStart(6, '0')}Z`,
      })),
    );
    await srv!.stop();
    rmSync(lake, { recursive: true, force: true });
    let interrupted = 0;
    for (const ms of [0, 50, 150, 300, 500, 800, 1200]) {
      srv = await startServer(db.url, { ...ENV, EXPORT_MAX_ROWS: '1000' });
      // New events arrive meanwhile too.
      await postBotApi(srv.url, p.token, { events: [event('4242')] });
      await new Promise((r) => setTimeout(r, ms));
      await srv.kill();
      // A window recorded and not finished, or files staged: the kill landed inside an export.
      const [w] = await db.sql<{ open: boolean }[]>`
        SELECT bool_or(pending_before IS NOT NULL OR history_pending IS NOT NULL) AS open FROM lake_dirs WHERE retired_at IS NULL`;
      if (w?.open || existsSync(join(lake, '.staging'))) interrupted++;
    }
    expect(interrupted).toBeGreaterThan(0);
    srv = await startServer(db.url, { ...ENV, EXPORT_MAX_ROWS: '1000' });
    await lakeEqualsDatabase(120_000);
  }, 240_000);

  it('an erasure rewrites every file that held the user, the users snapshots too, and says how many', async () => {
    const user = '1001';
    const files = async () =>
      (await inLake('events', 'platform_user_id', user)) + (await inLake('users', 'messenger_user_id', user));
    expect(await inLake('events', 'platform_user_id', user)).toBeGreaterThan(0);
    expect(await inLake('users', 'messenger_user_id', user)).toBe(1);
    const r = await admin(srv!.url, 'POST', `/admin/projects/${p.projectId}/erasures`, { userIds: [user] });
    await eraseAndWait(srv!.url, p.projectId, [user]);
    const rec = await admin(srv!.url, 'GET', `/admin/projects/${p.projectId}/erasures/${r.body.erasureId}`);
    expect(rec.body.deleted.lakeFiles).toBeGreaterThan(0);
    expect(await files()).toBe(0);
    await lakeEqualsDatabase();
  });

  it('retention removes the days its partitions held; an emptied directory is written again', async () => {
    await srv!.stop();
    const old = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 3, 15))
      .toISOString()
      .slice(0, 10);
    await storeOld(p.projectId, p.botId, [{ user: 31, at: `${old}T08:00:00Z` }]);
    // Stored behind the watermark, as only history is: a new lake takes it.
    rmSync(lake, { recursive: true, force: true });
    srv = await startServer(db.url, ENV);
    await lakeEqualsDatabase(60_000);
    expect(existsSync(join(lake, 'events', `project_id=${p.projectId}`, `date=${old}`))).toBe(true);
    await srv.stop();
    srv = await startServer(db.url, { ...ENV, EVENTS_RETENTION_MONTHS: '1' });
    await expect
      .poll(() => existsSync(join(lake, 'events', `project_id=${p.projectId}`, `date=${old}`)), { timeout: 30_000 })
      .toBe(false);
    await lakeEqualsDatabase();
    // Emptied while running: noticed at the next export, and written again whole.
    rmSync(lake, { recursive: true, force: true });
    await lakeEqualsDatabase(60_000);
  }, 240_000);

  it('leaves a directory another deployment wrote alone', async () => {
    const foreign = join(tmpdir(), `tg-lake-foreign-${randomUUID()}`);
    mkdirSync(foreign, { recursive: true });
    writeFileSync(join(foreign, 'lake-id'), `${randomUUID()}\n`);
    const other = await startServer(db.url, { ...ENV, EXPORT_DIR: foreign, PORT: '0' });
    try {
      await expect
        .poll(() => other.output.some((l) => l.includes('EXPORT_DIR holds a lake this database does not know')), {
          timeout: 15_000,
        })
        .toBe(true);
      expect(readdirSync(foreign)).toEqual(['lake-id']);
    } finally {
      await other.stop();
      rmSync(foreign, { recursive: true, force: true });
    }
  });
});
