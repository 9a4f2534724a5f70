// Writes every stored event to the lake as Parquet, exactly once. One instance at a time (LAKE_WRITER_LOCK), in
// turns: the rows received since the watermark, every EXPORT_EVERY_MS; between those, the history received before
// the lake began, newest first; then closed days' files joined into one, the day's users snapshot, and the days
// EVENTS_RETENTION_MONTHS no longer keeps. A window is recorded as pending before its files are written, and its
// files are named by where it starts: after a crash the same window is written again under the same names, and the
// watermark moves only once they are in place (under LAKE_PUBLISH_LOCK, which a funnel shares).
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { DAY_MS } from '../base/days.js';
import { Every } from '../base/every.js';
import type { Logger } from '../base/log.js';
import type { Sql } from '../db/connect.js';
import { LAKE_PUBLISH_LOCK, LAKE_WRITER_LOCK } from '../db/locks.js';
import { WRITERS_START_SQL } from '../db/writers.js';
import { type LakeEngine, literal } from './engine.js';
import { copyToCsv, daysIn, parquetIn, projectsIn, readLakeId, writeLakeId } from './files.js';
import { dayDir, dayFile, firstKeptDay, STAGING_DIR, STAMP_SQL, USERS_FILE, windowFile } from './layout.js';
import { EVENT_CSV_SELECT, eventsFromCsv, PARQUET, USER_CSV_SELECT, usersFromCsv } from './rows.js';

export interface ExporterOptions {
  dir: string;
  everyMs: number;
  maxRows: number;
  /** WRITE_TIMEOUT_MS: a row is committed at most this long after it was received. */
  holdBackMs: number;
  retentionMonths: number | null;
  /** Users snapshots kept per project, the newest. */
  usersDays: number;
  /**
   * Whether ingestion is using the machine now: an export then waits (its lag grows and is caught up after), unless
   * the lag has reached MAX_LAG_TURNS exports' worth.
   */
  busy?: () => boolean;
}

/** How far behind (in EXPORT_EVERY_MS) the lake may fall while ingestion keeps the process busy. */
const MAX_LAG_TURNS = 10;
/** How soon an export that waited for a busy process looks again. */
const BUSY_RETRY_MS = 1000;

/** The lake's row, times as ISO text in UTC to the microsecond (file names follow from them). */
export interface LakeRow {
  lakeId: string;
  newFrom: string;
  exportedBefore: string;
  pendingBefore: string | null;
  historyFrom: string;
  historyPending: string | null;
  usersDay: string | null;
  exportedAt: Date | null;
}

// Times cross to and from the database as text, to the microsecond: postgres.js sends a parameter the server types
// as timestamptz through a JavaScript Date, which keeps milliseconds only (a window's bounds would then differ from
// what was stored, and rows between them be exported twice).
const ISO = (c: string) => `to_char((${c}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const LAKE_COLUMNS = `lake_id::text AS "lakeId", ${ISO('new_from')} AS "newFrom",
  ${ISO('exported_before')} AS "exportedBefore", ${ISO('pending_before')} AS "pendingBefore",
  CASE WHEN history_from = '-infinity' THEN '-infinity' ELSE ${ISO('history_from')} END AS "historyFrom",
  ${ISO('history_pending')} AS "historyPending", users_day::text AS "usersDay", exported_at AS "exportedAt"`;

export async function readLake(sql: Sql, lakeId: string): Promise<LakeRow | null> {
  const [row] = await sql.unsafe<LakeRow[]>(`SELECT ${LAKE_COLUMNS} FROM lake_dirs WHERE lake_id = $1`, [lakeId]);
  return row ?? null;
}

/**
 * What a turn did: whether more work waits (history, days to join), so the next turn comes at once, or it waited for
 * a busy process.
 */
type Turn = 'idle' | 'more' | 'deferred';

export class LakeExporter {
  private readonly every: Every;
  private lastNew = 0;
  /** The span of time one history window covers: halved while windows hold too many rows, doubled while few. */
  private historySpanMs = DAY_MS;
  /**
   * The oldest received_at stored (ms, null when none), read once per lake: finding it scans the oldest partition,
   * and rows are only ever received later (retention makes it later still, which a window past it covers).
   */
  private oldest: { lakeId: string; ms: number | null } | null = null;
  /** Seconds from the watermark to now, as last read; null before the first read. */
  get lagSeconds(): number | null {
    return this.watermarkMs === null ? null : Math.max(0, (Date.now() - this.watermarkMs) / 1000);
  }
  /** The watermark as last read or moved (ms since 1970). */
  private watermarkMs: number | null = null;
  /** The lake this directory holds, once known; 'foreign' when it names a lake this database does not know. */
  lakeId: string | null = null;
  foreign = false;
  private readonly instanceId = randomUUID();
  /** The connection that holds the writer lock, for the turn under way: what a turn publishes goes through it. */
  private holder: Sql | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly engine: LakeEngine,
    private readonly opts: ExporterOptions,
    private readonly log: Logger,
  ) {
    this.every = new Every(
      opts.everyMs,
      () => this.scheduled(),
      (err, failures) =>
        this.log[failures % 10 === 1 ? 'error' : 'debug'](
          { err: (err as Error).message, failures },
          'lake export failed; tried again next turn',
        ),
    );
  }

  start(): void {
    this.every.start();
  }

  async stop(): Promise<void> {
    await this.every.stop();
  }

  /** A turn, and how soon the next: at once while more waits, but never sooner than the new rows' next window. */
  private async scheduled(): Promise<number> {
    const t = await this.turn();
    if (t === 'more') return 0;
    if (t === 'deferred') return BUSY_RETRY_MS;
    return Math.max(0, this.lastNew + this.opts.everyMs - Date.now());
  }

  /** One unit of work under the writer lock; a turn that finds the lock held by another instance only reads the lag. */
  async turn(): Promise<Turn> {
    // A busy machine as the last turn left it: no connection taken, no lock.
    if (this.opts.busy?.() && this.lagSeconds !== null && this.lagSeconds * 1000 < MAX_LAG_TURNS * this.opts.everyMs)
      return 'deferred';
    const conn = await this.sql.reserve();
    try {
      const [lock] = await conn<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${LAKE_WRITER_LOCK}) AS ok`;
      if (!lock!.ok) {
        await this.readLag(conn as unknown as Sql);
        return 'idle';
      }
      this.holder = conn as unknown as Sql;
      try {
        return await this.locked(conn as unknown as Sql);
      } finally {
        this.holder = null;
        await conn`SELECT pg_advisory_unlock(${LAKE_WRITER_LOCK})`;
      }
    } finally {
      conn.release();
    }
  }

  private async readLag(sql: Sql): Promise<void> {
    const id = this.lakeId ?? readLakeId(this.opts.dir);
    const lake = id === null ? null : await readLake(sql, id);
    if (lake !== null) this.watermarkMs = Date.parse(lake.exportedBefore);
  }

  private async locked(sql: Sql): Promise<Turn> {
    const lake = await this.openLake(sql);
    if (lake === null) return 'idle';
    const lagMs = Date.now() - Date.parse(lake.exportedBefore);
    if (this.opts.busy?.() && lagMs < MAX_LAG_TURNS * this.opts.everyMs) return 'deferred';
    // This writer's own staging directory: a writer that lost the lock without knowing it (its connection cut) never
    // empties the next one's. Another's is left an hour before it goes.
    const stagingRoot = join(this.opts.dir, STAGING_DIR);
    const staging = join(stagingRoot, this.instanceId);
    removeStaleStaging(stagingRoot, this.instanceId);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    try {
      if (lake.pendingBefore !== null || Date.now() - this.lastNew >= this.opts.everyMs) {
        this.lastNew = Date.now();
        const moved = await this.exportNew(sql, lake, staging);
        if (moved) return 'more';
      }
      if (lake.historyFrom !== '-infinity' && (await this.exportHistory(sql, lake, staging))) return 'more';
      const fresh = (await readLake(sql, lake.lakeId))!;
      if (await this.joinClosedDay(fresh, staging)) return 'more';
      await this.snapshotUsers(sql, fresh, staging);
      this.dropOldDays();
      return 'idle';
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }

  /** The lake row of the directory: made for a new or emptied one; null for one another database wrote. */
  private async openLake(sql: Sql): Promise<LakeRow | null> {
    mkdirSync(this.opts.dir, { recursive: true });
    const id = readLakeId(this.opts.dir);
    if (id !== null) {
      const lake = await readLake(sql, id);
      if (lake === null) {
        if (!this.foreign)
          this.log.error(
            { dir: this.opts.dir, lakeId: id },
            'EXPORT_DIR holds a lake this database does not know (another deployment wrote it): nothing is exported there until it is emptied',
          );
        this.foreign = true;
        return null;
      }
      this.foreign = false;
      this.lakeId = id;
      this.watermarkMs = Date.parse(lake.exportedBefore);
      return lake;
    }
    // A new directory, or one emptied: written from the start. One that holds anything else is not the service's to
    // write over (a mistaken EXPORT_DIR).
    const held = readdirSync(this.opts.dir).filter((n) => n !== STAGING_DIR);
    if (held.length > 0) {
      if (!this.foreign)
        this.log.error(
          { dir: this.opts.dir, holds: held.slice(0, 5) },
          'EXPORT_DIR is not empty and names no lake: nothing is exported there until it is emptied',
        );
      this.foreign = true;
      return null;
    }
    const lakeId = randomUUID();
    await sql.unsafe(
      `WITH bound AS (SELECT ${WRITERS_START_SQL} - make_interval(secs => $3::float8 / 1000) AS at)
       INSERT INTO lake_dirs (lake_id, path, new_from, exported_before, history_from)
       SELECT $1::uuid, $2, at, at, at FROM bound`,
      [lakeId, this.opts.dir, this.opts.holdBackMs],
    );
    await sql`UPDATE lake_dirs SET retired_at = now() WHERE path = ${this.opts.dir} AND lake_id <> ${lakeId}::uuid
      AND retired_at IS NULL`;
    writeLakeId(this.opts.dir, lakeId);
    this.log.info({ dir: this.opts.dir, lakeId }, 'lake started: new rows are exported from now on, history behind');
    this.lakeId = lakeId;
    return readLake(sql, lakeId);
  }

  /** The rows received since the watermark, up to a bound every writer has passed; whether a full window was written. */
  private async exportNew(sql: Sql, lake: LakeRow, staging: string): Promise<boolean> {
    const from = lake.exportedBefore;
    let to = lake.pendingBefore;
    let full = false;
    if (to === null) {
      const [b] = await sql.unsafe<{ at: string }[]>(
        `SELECT ${ISO(`${WRITERS_START_SQL} - make_interval(secs => $1::float8 / 1000)`)} AS at`,
        [this.opts.holdBackMs],
      );
      const bound = b!.at;
      if (!(bound > from)) return false;
      const cut = await this.cutWindow(sql, from, bound);
      to = cut.to;
      full = cut.full;
      await sql`UPDATE lake_dirs SET pending_before = ${to}::text::timestamptz WHERE lake_id = ${lake.lakeId}::uuid`;
    }
    const stamp = await this.stamp(sql, from);
    const files = await this.writeWindow(sql, from, to, staging);
    await this.publish(files, 'n', stamp, async (tx) => {
      return tx`UPDATE lake_dirs SET exported_before = pending_before, pending_before = NULL, exported_at = now()
        WHERE lake_id = ${lake.lakeId}::uuid AND exported_before = ${from}::text::timestamptz AND pending_before = ${to}::text::timestamptz`;
    });
    this.watermarkMs = Date.parse(to);
    return full;
  }

  /** [from, to) cut short so it holds at most maxRows rows (a moment's rows are never split). */
  private async cutWindow(sql: Sql, from: string, to: string): Promise<{ to: string; full: boolean }> {
    let end = to;
    for (let tries = 0; tries < 20; tries++) {
      const [c] = await sql<{ n: number }[]>`
        SELECT count(*)::float8 AS n FROM events WHERE received_at >= ${from}::text::timestamptz AND received_at < ${end}::text::timestamptz`;
      if (c!.n <= this.opts.maxRows) return { to: end, full: tries > 0 };
      const span = Date.parse(end) - Date.parse(from);
      if (span <= 1) break;
      const shorter = Math.max(1, Math.floor((span * this.opts.maxRows * 0.9) / c!.n));
      end = new Date(Date.parse(from) + shorter).toISOString();
    }
    return { to: end, full: true };
  }

  /** The history received before the lake began, newest first, a window at a time; whether one was written. */
  private async exportHistory(sql: Sql, lake: LakeRow, staging: string): Promise<boolean> {
    const to = lake.historyFrom;
    let from = lake.historyPending;
    if (from === null) {
      if (this.oldest?.lakeId !== lake.lakeId) this.oldest = { lakeId: lake.lakeId, ms: await oldestReceived(sql) };
      const oldest = this.oldest.ms;
      if (oldest === null || !(oldest < Date.parse(to))) {
        await sql`UPDATE lake_dirs SET history_from = '-infinity' WHERE lake_id = ${lake.lakeId}::uuid`;
        this.log.info({ lakeId: lake.lakeId }, 'lake history exported');
        return false;
      }
      for (;;) {
        // Whole UTC days where the span allows: each closed day then ends as one file, which becomes the day's by a
        // rename rather than by a rewrite.
        const earliest = Math.max(oldest, Date.parse(to) - this.historySpanMs);
        const midnight = Math.ceil(earliest / DAY_MS) * DAY_MS;
        const start = midnight > earliest && midnight < Date.parse(to) ? midnight : earliest;
        from = new Date(start).toISOString();
        const [c] = await sql<{ n: number }[]>`
          SELECT count(*)::float8 AS n FROM events WHERE received_at >= ${from}::text::timestamptz AND received_at < ${to}::text::timestamptz`;
        if (c!.n > this.opts.maxRows && this.historySpanMs > 1000) this.historySpanMs /= 2;
        else {
          if (c!.n < this.opts.maxRows / 4 && this.historySpanMs < 30 * DAY_MS) this.historySpanMs *= 2;
          break;
        }
      }
      await sql`UPDATE lake_dirs SET history_pending = ${from}::text::timestamptz WHERE lake_id = ${lake.lakeId}::uuid`;
    }
    const stamp = await this.stamp(sql, from);
    const files = await this.writeWindow(sql, from, to, staging);
    await this.publish(files, 'h', stamp, async (tx) => {
      return tx`UPDATE lake_dirs SET history_from = history_pending, history_pending = NULL
        WHERE lake_id = ${lake.lakeId}::uuid AND history_from = ${to}::text::timestamptz AND history_pending = ${from}::text::timestamptz`;
    });
    return true;
  }

  private async stamp(sql: Sql, at: string): Promise<string> {
    const [s] = await sql.unsafe<{ s: string }[]>(`SELECT ${STAMP_SQL('$1::text::timestamptz')} AS s`, [at]);
    return s!.s;
  }

  /** The rows received in [from, to) as Parquet under staging/out, by project and day; the files written. */
  private async writeWindow(sql: Sql, from: string, to: string, staging: string): Promise<StagedFile[]> {
    const csv = join(staging, 'rows.csv');
    const bytes = await copyToCsv(
      sql,
      `${EVENT_CSV_SELECT} WHERE received_at >= ${literal(from)}::timestamptz AND received_at < ${literal(to)}::timestamptz`,
      csv,
    );
    if (bytes === 0) return [];
    const out = join(staging, 'out');
    const c = await this.engine.connect();
    try {
      await c.run(
        `COPY (${eventsFromCsv(csv)}) TO ${literal(out)} (${PARQUET}, PARTITION_BY (project_id, date), FILENAME_PATTERN 'f{i}')`,
      );
    } finally {
      c.closeSync();
    }
    unlinkSync(csv);
    return staged(out);
  }

  /**
   * The window's files put in place and its watermark moved, in one step readers see whole, on the connection that
   * holds the writer lock: a writer that lost it publishes nothing. The watermark moves only from where this window
   * began (else another writer moved it, and nothing is put in place); parts a try before this one wrote beyond this
   * try's are removed.
   */
  private async publish(
    files: StagedFile[],
    kind: 'n' | 'h',
    stamp: string,
    move: (tx: Sql) => Promise<{ count: number }>,
  ): Promise<void> {
    await this.underPublish(async (tx) => {
      const moved = await move(tx);
      if (moved.count !== 1) throw new Error('the lake moved under this export: another writer took the window');
      const written = new Map<string, Set<string>>();
      for (const f of files) {
        const dir = dayDir(this.opts.dir, 'events', f.projectId, f.day);
        mkdirSync(dir, { recursive: true });
        const name = windowFile(kind, stamp, f.part);
        renameSync(f.path, join(dir, name));
        written.set(dir, (written.get(dir) ?? new Set()).add(name));
      }
      for (const [dir, names] of written)
        for (const n of readdirSync(dir))
          if (n.startsWith(`${kind}-${stamp}-`) && !names.has(n)) unlinkSync(join(dir, n));
    });
  }

  /**
   * One closed day's files made its one `c-` file, joined (or renamed, when there is one): a day is closed once the
   * watermark and the history have both passed it, so no window writes to it again. Whether one was made.
   */
  private async joinClosedDay(lake: LakeRow, staging: string): Promise<boolean> {
    const today = lake.exportedBefore.slice(0, 10);
    const historyDay = lake.historyFrom === '-infinity' ? null : lake.historyFrom.slice(0, 10);
    for (const projectId of projectsIn(this.opts.dir, 'events')) {
      for (const day of daysIn(this.opts.dir, 'events', projectId)) {
        if (day >= today) break;
        // The history's first day may still get rows.
        if (historyDay !== null && day <= historyDay) continue;
        const dir = dayDir(this.opts.dir, 'events', projectId, day);
        const names = parquetIn(dir);
        const joined = dayFile(day);
        if (names.length <= 1 && (names.length === 0 || names[0] === joined)) continue;
        const others = names.filter((n) => n !== joined);
        if (names.length === 1) {
          // A day's only file (a history window of whole days, or a lone export) is what a join would write.
          await this.underPublish(() => renameSync(join(dir, names[0]!), join(dir, joined)));
          return true;
        }
        if (names.includes(joined)) {
          // A join a crash interrupted after its file was in place: the others are in it already.
          await this.underPublish(() => {
            for (const n of others) unlinkSync(join(dir, n));
          });
          return true;
        }
        const tmp = join(staging, joined);
        const c = await this.engine.connect();
        try {
          const list = `[${others.map((n) => literal(join(dir, n))).join(', ')}]`;
          await c.run(
            `COPY (SELECT * FROM read_parquet(${list}, hive_partitioning = false, union_by_name = true)) TO ${literal(tmp)} (${PARQUET})`,
          );
        } finally {
          c.closeSync();
        }
        await this.underPublish(() => {
          renameSync(tmp, join(dir, joined));
          for (const n of others) unlinkSync(join(dir, n));
        });
        return true;
      }
    }
    return false;
  }

  /** `f` under the publish lock, in a transaction of the connection that holds the writer lock. */
  private async underPublish(f: (tx: Sql) => void | Promise<void>): Promise<void> {
    const tx = this.holder;
    if (tx === null) throw new Error('publishing outside a turn');
    await tx.unsafe('BEGIN');
    try {
      await tx`SELECT pg_advisory_xact_lock(${LAKE_PUBLISH_LOCK})`;
      await f(tx);
      await tx.unsafe('COMMIT');
    } catch (err) {
      await tx.unsafe('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  /** Today's users snapshot, once a day, and the oldest ones past usersDays removed. */
  private async snapshotUsers(sql: Sql, lake: LakeRow, staging: string): Promise<void> {
    const today = new Date().toISOString().slice(0, 10);
    if (lake.usersDay !== null && lake.usersDay >= today) return;
    const csv = join(staging, 'users.csv');
    const bytes = await copyToCsv(sql, USER_CSV_SELECT, csv);
    if (bytes > 0) {
      const out = join(staging, 'users');
      const c = await this.engine.connect();
      try {
        await c.run(
          `COPY (${usersFromCsv(csv)}) TO ${literal(out)} (${PARQUET}, PARTITION_BY (project_id), FILENAME_PATTERN 'f{i}')`,
        );
      } finally {
        c.closeSync();
      }
      for (const f of staged(out, false)) {
        const dir = dayDir(this.opts.dir, 'users', f.projectId, today);
        mkdirSync(dir, { recursive: true });
        renameSync(f.path, join(dir, f.part === 0 ? USERS_FILE : `users-${f.part}.parquet`));
      }
    }
    await sql`UPDATE lake_dirs SET users_day = ${today}::date WHERE lake_id = ${lake.lakeId}::uuid`;
    for (const projectId of projectsIn(this.opts.dir, 'users')) {
      const days = daysIn(this.opts.dir, 'users', projectId);
      for (const day of days.slice(0, Math.max(0, days.length - this.opts.usersDays)))
        rmSync(dayDir(this.opts.dir, 'users', projectId, day), { recursive: true, force: true });
    }
  }

  /** The days EVENTS_RETENTION_MONTHS no longer keeps, as its partitions are dropped. */
  private dropOldDays(): void {
    if (this.opts.retentionMonths === null) return;
    const first = firstKeptDay(this.opts.retentionMonths, new Date());
    for (const dataset of ['events', 'users'] as const)
      for (const projectId of projectsIn(this.opts.dir, dataset))
        for (const day of daysIn(this.opts.dir, dataset, projectId)) {
          if (day >= first) break;
          rmSync(dayDir(this.opts.dir, dataset, projectId, day), { recursive: true, force: true });
        }
  }
}

interface StagedFile {
  path: string;
  projectId: string;
  day: string;
  part: number;
}

/** The files a partitioned COPY wrote under `out` (project_id=…/[date=…/]f<i>.parquet). */
function staged(out: string, byDay = true): StagedFile[] {
  const files: StagedFile[] = [];
  for (const p of readdirSync(out, { withFileTypes: true })) {
    if (!p.isDirectory() || !p.name.startsWith('project_id=')) continue;
    const projectId = p.name.slice('project_id='.length);
    const pdir = join(out, p.name);
    const leaves = byDay
      ? readdirSync(pdir)
          .filter((d) => d.startsWith('date='))
          .map((d) => ({ day: d.slice(5), dir: join(pdir, d) }))
      : [{ day: '', dir: pdir }];
    for (const { day, dir } of leaves)
      for (const f of readdirSync(dir)) {
        const m = /^f(\d+)\.parquet$/.exec(f);
        if (m) files.push({ path: join(dir, f), projectId, day, part: Number(m[1]) });
      }
  }
  return files;
}

/** Staging directories other writers left more than an hour ago (a crash, a lost lock). */
function removeStaleStaging(root: string, own: string): void {
  if (!existsSync(root)) return;
  for (const n of readdirSync(root)) {
    if (n === own) continue;
    const p = join(root, n);
    if (Date.now() - statSync(p).mtimeMs > 3_600_000) rmSync(p, { recursive: true, force: true });
  }
}

/** The oldest received_at stored, in ms truncated from µs (a window starting there still holds that row). */
async function oldestReceived(sql: Sql): Promise<number | null> {
  const parts = await sql<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$' ORDER BY 1`;
  for (const { name } of parts) {
    const [m] = await sql.unsafe<{ at: string | null }[]>(`SELECT ${ISO('min(received_at)')} AS at FROM ${name}`);
    if (m?.at) return Date.parse(m.at);
  }
  return null;
}
