// Keeps the report aggregates (migration 9) up to date. Every REPORTS_EVERY_MS one instance (a lock) folds what was
// committed since it last looked into them, in the transaction that consumes it, so each stored event counts exactly
// once however often a fold is retried:
// - each commit's report summary (src/pipeline/summary.ts), deleted once folded, and the rows no summary holds (a
//   commit through the writer's staging table, a row by hand), marked folded (summarized = true). Both are taken as
//   they become visible, in commit order or not: a commit that lands late (a standby slow to confirm, a failover) is
//   counted when it lands, and nothing waits on a clock. One snapshot for the whole fold (REPEATABLE READ) makes every
//   statement of it see the same commits, and the lock is taken before that snapshot, so a fold never reads what an
//   erasure it waited for has removed.
// - events received before summaries began (an upgrade from a build that kept none) are read from the table, in
//   windows of time up to summaries_since, as long as a request can wait for its transaction (WRITE_TIMEOUT_MS)
//   behind the oldest writer still open.
// Folds are sized to what a transaction handles in well under a second, so catching up never holds locks for long.
import type { Sql, Tx } from '../db/connect.js';
import { REPORTS_FOLD_LOCK } from '../db/locks.js';
import { HOLD_BACK_MS, writersStart } from '../db/writers.js';
import type { Logger } from '../base/log.js';
import { SessionSummaryFormatError } from '../pipeline/session-summary.js';
import { SummaryFormatError } from '../pipeline/summary.js';
import { Turns } from '../base/turns.js';
import { FiledUsers } from './filed-users.js';
import { Every } from '../base/every.js';
import { FOLD_EVENTS, FOLD_SUMMARIES, FOLD_VERSION, SUMMARIZE } from './fold-sql.js';
import { FOLD_SESSIONS_EVENTS, FOLD_SESSIONS_SUMMARIES } from './session-sql.js';
import { addToSketches, type SketchInput } from './sketch-store.js';
import { WindowSummaries } from './summaries.js';

/**
 * How large a fold is, by what it costs: events read from the table, or, from summaries, the groups they make (a
 * group's probes of the report tables are most of a fold's cost; a million summarized events of 8,000 users fold in
 * about the time of 100,000 of 100,000).
 */
const TARGET_ROWS = 100_000;
const MIN_STEP_MS = 1000;
/** A window of history never spans more than this, however sparse the events: a dense stretch after it stays bounded. */
const MAX_STEP_MS = 3_600_000;
/**
 * What one fold of summaries may take (at least one summary whatever its size): bytes of summaries (about 16 an
 * event), summaries (a commit's each: the list held to fetch them), and rows they group into (the JavaScript maps
 * that hold them, and the fold's probes). A failed fold takes a quarter next time, down to one summary.
 */
const FOLD_SUMMARY_BYTES = 32 * 1024 * 1024;
const FOLD_SUMMARIES_MAX = 200_000;
const FOLD_GROUPS = 4 * TARGET_ROWS;
/** Rows no summary holds, per fold (more when several share the last one's received_at). */
const TABLE_ROWS = TARGET_ROWS;
/** Summaries fetched per query, by their bytes. */
const READ_BYTES = 4 * 1024 * 1024;
/** Users the rows no summary holds may name before every user of their projects is probed (as before FiledUsers). */
const TABLE_USERS = 10_000;
/** Projects those rows may name before every user of the fold is probed, and none remembered. */
const TABLE_PROJECTS = 1_000;
/** lock_not_available: another instance folds, or an erasure or a hand edit holds the watermark. */
const LOCK_NOT_AVAILABLE = '55P03';
const SERIALIZATION_FAILURE = '40001';
/** Folds in a row that found the watermark locked before a warning (and again each as many more). */
const LOCK_MISSES_WARN = 60;
/** What a fold's transaction answers when an older build holds the advisory lock. */
const LOCK_MISSED = Symbol('lock missed');

export interface AggregatorOptions {
  everyMs: number;
  /**
   * How long before its transaction begins a request's received_at may be stamped (WRITE_TIMEOUT_MS): windows of
   * history close that far behind the oldest writer still open.
   */
  historyLagMs: number;
}

export interface FoldResult {
  source: 'events' | 'summaries';
  /** Events folded. */
  events: number;
  /** The fold's size by TARGET_ROWS: events read from the table, or groups made of summaries and rows. */
  rows: number;
  /** Whether more was there than the fold took. */
  behind: boolean;
}

export class ReportAggregator {
  /**
   * A window of history starts from the smallest up: an instance that starts after others ran would otherwise fold a
   * minute of busy traffic in its first transaction, seconds long, while an erasure waits for the lock.
   */
  private step = MIN_STEP_MS;
  /** The share of the FOLD_* bounds a fold of summaries may take: a quarter after a failure, back up after a fold. */
  private share = 1;
  private readonly filed = new FiledUsers();
  private readonly every: Every;
  /** A catch-up under way ends after its fold. */
  private stopped = false;
  /** Folds in a row that found the watermark locked. */
  private lockMisses = 0;
  /** Whether the last fold found no events from before summaries began left to read. */
  private historyDone = false;

  constructor(
    private readonly sql: Sql,
    private readonly opts: AggregatorOptions,
    private readonly log: Logger,
  ) {
    this.every = new Every(
      opts.everyMs,
      () => this.catchUp(),
      (err, failures) => {
        // Smaller folds next time: one too big for its transaction is split until it passes.
        this.step = Math.max(MIN_STEP_MS, this.step / 4);
        this.share = Math.max(1 / 1024, this.share / 4);
        this.log[failures >= 5 ? 'error' : 'warn'](
          { err: (err as Error).message, failures },
          'report aggregation failed',
        );
      },
    );
  }

  /** The users folded without a probe (hits) and with one (misses): FiledUsers. */
  get filedUsersStats(): { hits: number; misses: number } {
    return this.filed.stats;
  }

  start(): void {
    this.every.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.every.stop();
  }

  /**
   * Folds until nothing is left that was there when the catch-up began (or another instance holds the lock). Not
   * until nothing is left at all: under load a fold of that second alone would probe its users again at once
   * (measured: ~0.6 s of a 1.5 s window's cost, for 5% of its events); they wait for the next turn.
   */
  async catchUp(): Promise<void> {
    for (;;) {
      const r = await this.fold();
      if (r === null || !r.behind || this.stopped) return;
    }
  }

  /**
   * One fold: while events stored before summaries began are left, a window of them (`events`), and nothing else
   * (what commits add waits, so that first campaigns, and payments counted once, fall in the order they came);
   * after, what commits left since the last fold (`summaries`). Null when another instance holds the lock or there
   * is nothing to fold.
   */
  async fold(): Promise<FoldResult | null> {
    const started = performance.now();
    // Read before the fold's snapshot: a writer that commits after it is still open here, so it holds a window of
    // history back (read inside, it could be gone from pg_stat_activity and invisible to the snapshot both). Not read
    // once history is done: a rebuild that brings it back costs one turn.
    const heldNow = this.historyDone ? null : await writersStart(this.sql);
    // What the fold filed, told to this.filed once its transaction has committed.
    let afterCommit: (() => void | Promise<void>) | null = null;
    let locked = false;
    let result: FoldResult | null | typeof LOCK_MISSED;
    try {
      result = (await this.sql.begin('isolation level repeatable read', async (tx) => {
        // First, before any statement takes the snapshot: an erasure that held the lock has committed by then, and
        // this fold sees what it removed as removed. An older build's erasure takes the advisory lock alone.
        await tx`LOCK TABLE report_watermark IN EXCLUSIVE MODE NOWAIT`;
        locked = true;
        const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${REPORTS_FOLD_LOCK}) AS ok`;
        // An older build's fold or erasure.
        if (!lock?.ok) return LOCK_MISSED;
        // The version lets the watermark move (migration 10's guard); `folding` leaves this transaction's own changes
        // to report_users and report_active uncounted by migration 13's triggers.
        await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true), set_config('tg_ingest.folding', 'on', true)`;
        const wm = await readWatermark(tx);
        // A fold's grouping stays in memory: spilled to disk it cost the fold twice as much (measured).
        await tx`SET LOCAL work_mem = '64MB'`;
        // The planner expects many groups and sorts a million rows on disk; hashed, they fit in a few MB (measured:
        // 3.6 s against 1.4 s for 900,000 events).
        await tx`SET LOCAL enable_sort = off`;
        const history = wm.since > Number.NEGATIVE_INFINITY && (wm.at === null || wm.at < wm.since);
        this.historyDone = !history;
        let r: FoldResult | null;
        if (history) r = heldNow === null ? null : await this.foldHistory(tx, wm, heldNow);
        else {
          const f = await this.foldCommits(tx, wm);
          afterCommit = f?.afterCommit ?? null;
          r = f?.result ?? null;
        }
        if (r === null) return null;
        await tx`UPDATE report_watermark SET folds = folds + 1`;
        return r;
      })) as FoldResult | null | typeof LOCK_MISSED;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!locked && code === LOCK_NOT_AVAILABLE) return this.missedLock();
      // Another transaction changed a row this fold read (an erasure deleting events it had not folded yet): the
      // fold is undone whole and the next one reads them as they are; no reason to make folds smaller.
      if (code === SERIALIZATION_FAILURE) {
        this.log.debug({ err: (err as Error).message }, 'report fold met a concurrent change: folded again next time');
        return null;
      }
      throw err;
    }
    if (result === LOCK_MISSED) return this.missedLock();
    this.lockMisses = 0;
    await (afterCommit as (() => void | Promise<void>) | null)?.();
    if (result === null) return null;
    this.log.debug({ ...result, ms: Math.round(performance.now() - started) }, 'report window folded');
    if (result.source === 'summaries') this.share = Math.min(1, this.share * 2);
    // Windows of history of about TARGET_ROWS: halved after a heavy one, doubled after a light one.
    else if (result.rows > TARGET_ROWS * 2) this.step = Math.max(MIN_STEP_MS, this.step / 2);
    else if (result.rows < TARGET_ROWS / 2) this.step = Math.min(MAX_STEP_MS, this.step * 2);
    return result;
  }

  /** A fold that found the lock held: counted, and warned of when it keeps happening. */
  private missedLock(): null {
    this.lockMisses++;
    if (this.lockMisses % LOCK_MISSES_WARN === 0)
      this.log.warn(
        { tries: this.lockMisses },
        'the reports have not folded for a while: report_watermark is locked (a hand edit of the report tables left open?)',
      );
    return null;
  }

  /** BRIN summaries of the partitions a window of the table reads (SUMMARIZE). */
  private async summarizeBrin(from: string, to: string): Promise<void> {
    await this.sql
      .begin(async (tx) => {
        await tx`SET LOCAL lock_timeout = '200ms'`;
        await tx.unsafe(SUMMARIZE, [from, to]);
      })
      .catch((err: unknown) =>
        this.log.debug({ err: (err as Error).message }, 'BRIN summaries skipped this time (vacuum holds the index)'),
      );
  }

  /**
   * The next window of the events received before summaries began, read from the table; null when none is left or
   * none may close yet. It ends at summaries_since, at most a step from its start, and historyLagMs behind the start
   * of the oldest writer transaction still open (or behind now): a transaction slow to commit holds it back while it
   * runs, so its rows are never passed over. Only the service's writers count (a psql session left open does not),
   * for at most HOLD_BACK_MS.
   */
  private async foldHistory(tx: Tx, wm: Watermark, heldNow: number): Promise<FoldResult | null> {
    // Whole milliseconds, as windows end: a window that reached it is not behind.
    const until = Math.floor(Math.min(wm.since, heldNow - this.opts.historyLagMs));
    let from = wm.at === null ? '-infinity' : new Date(wm.at).toISOString();
    if (wm.at === null) {
      // The first run: from the oldest stored event (the oldest partition that holds one, read once). Stepping
      // through empty months in hour-long windows would keep the database busy.
      const parts = await tx<{ name: string }[]>`
        SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$' ORDER BY 1`;
      let oldest: number | null = null;
      for (const { name } of parts) {
        const [m] = await tx.unsafe<{ at: Date | null }[]>(`SELECT min(received_at) AS at FROM ${name}`);
        if (m?.at) {
          oldest = m.at.getTime();
          break;
        }
      }
      if (oldest === null || oldest > wm.since) {
        // No history: summaries hold everything, and are folded next, at once.
        await tx`UPDATE report_watermark SET received_before = summaries_since`;
        return { source: 'events', events: 0, rows: 0, behind: true };
      }
      from = new Date(oldest - 1).toISOString();
    }
    const fromMs = Date.parse(from);
    if (!(fromMs < until)) return null;
    // Whole milliseconds, as the watermark is stored and read back (steps halve and quarter into fractions).
    const toMs = Math.floor(Math.min(until, fromMs + this.step));
    const to = new Date(toMs).toISOString();
    // BRIN summaries in a short transaction of their own, never waiting: its lock would hold off vacuum.
    await this.summarizeBrin(from, to);
    const [row] = await tx.unsafe<FoldRow[]>(FOLD_EVENTS, [from, to]);
    // Each session probed by its key, as the summaries' fold does (there, with seq scans off already).
    await tx`SET LOCAL enable_seqscan = off`;
    await tx.unsafe(FOLD_SESSIONS_EVENTS, [from, to]);
    await tx`SET LOCAL enable_seqscan TO DEFAULT`;
    await addToSketches(tx, row!.sketches);
    await tx`UPDATE report_watermark SET received_before = ${to}`;
    this.filed.clear();
    return { source: 'events', events: row!.events, rows: row!.events, behind: toMs < until };
  }

  /**
   * What commits left since the last fold: summaries in the order they were written, up to the FOLD_* bounds, and
   * the rows no summary holds, up to TABLE_ROWS, received after where windows of time ended (`begins`). Null when
   * there is nothing. `afterCommit` tells this.filed what the fold filed, once it has committed.
   */
  private async foldCommits(
    tx: Tx,
    wm: Watermark,
  ): Promise<{ result: FoldResult; afterCommit: () => void | Promise<void> } | null> {
    // Every report table is read by key here. Planned on the statistics of a table that was empty when last
    // analyzed, a probe per user became a scan of the whole table per user (8,000 users: 0.7 s against 0.05 s).
    await tx`SET LOCAL enable_seqscan = off`;
    const stampBefore = stamp(wm.folds, wm.changed);
    this.filed.check(stampBefore);
    const begins = Math.max(wm.at ?? Number.NEGATIVE_INFINITY, wm.since);
    const from = Number.isFinite(begins) ? new Date(begins).toISOString() : '-infinity';
    const read = await this.readSummaries(tx, begins);
    // The rows no summary holds, up to the TABLE_ROWS-th by received_at (ties included).
    const [last] = await tx<{ at: string }[]>`
      SELECT received_at::text AS at FROM events WHERE summarized IS NOT TRUE AND received_at > ${from}::text::timestamptz
      ORDER BY received_at OFFSET ${TABLE_ROWS - 1} LIMIT 1`;
    const to = last?.at ?? 'infinity';
    // Who those rows name: their users go through the probes, as they may name a campaign; past TABLE_USERS, every
    // user of their projects does, and only theirs. What that costs is the probes the memory saves, never a count.
    const outside = await namedOutside(tx, from, to);
    const window = read.window;
    if (read.ids.length === 0 && outside !== null && 'users' in outside && outside.users.length === 0) {
      this.filed.settle(stampBefore);
      return null;
    }
    const remember = outside !== null;
    if (outside === null) this.filed.clear();
    else if ('users' in outside) {
      for (const o of outside.users) if (o.user_id !== null) window.mark(o.project_id, Number(o.user_id), true);
    } else {
      for (const projectId of outside.projects) window.markProject(projectId);
    }
    const base = await window.rows(remember ? this.filed : null);
    const [row] = await tx.unsafe<FoldRow[]>(FOLD_SUMMARIES, [
      from,
      'infinity',
      base.projectIds,
      base.days,
      base.types,
      base.users,
      base.campaigns,
      base.paymentIds,
      base.counts,
      base.firstAt,
      base.lastAt,
      to,
    ] as never[]);
    const sessions = window.sessionRows();
    await tx.unsafe(FOLD_SESSIONS_SUMMARIES, [
      sessions.projectIds,
      sessions.sessionIds,
      sessions.users,
      sessions.openedAt,
      sessions.platforms,
      sessions.lastAt,
      sessions.closedAt,
      from,
      to,
    ] as never[]);
    await addToSketches(tx, row!.sketches);
    // Consumed: the summaries deleted, the rows marked folded.
    if (read.ids.length > 0) await tx`DELETE FROM report_summaries WHERE summary_id = ANY(${read.ids}::bigint[])`;
    const [marked] = await tx<{ n: number }[]>`
      WITH m AS (
        UPDATE events SET summarized = true
        WHERE summarized IS NOT TRUE AND received_at > ${from}::text::timestamptz AND received_at <= ${to}::text::timestamptz RETURNING 1
      ) SELECT count(*)::int AS n FROM m`;
    // Folded by windows of time already (an older build's, before the upgrade), or, once those are long past, stamped
    // by an instance whose clock runs far behind: those are lost to the reports.
    if (window.skipped > 0)
      this.log[Date.now() - begins > HOLD_BACK_MS ? 'warn' : 'debug'](
        { sections: window.skipped, before: from },
        'report summaries held requests received before the reports began reading summaries: left out',
      );
    const stampAfter = stamp(wm.folds + 1, wm.changed);
    return {
      result: {
        source: 'summaries',
        events: row!.events,
        rows: window.groups + marked!.n,
        behind: read.behind || last !== undefined,
      },
      afterCommit: async () => {
        if (!remember) return;
        await window.fileInto(this.filed);
        this.filed.settle(stampAfter);
      },
    };
  }

  /**
   * The summaries a fold takes, in the order they were written, read and grouped (sections received after `begins`),
   * up to the FOLD_* bounds (times this.share), and always the first. A summary this build cannot read is deleted and
   * the fold fails (see dropUnreadable).
   */
  private async readSummaries(
    tx: Tx,
    begins: number,
  ): Promise<{ window: WindowSummaries; ids: string[]; behind: boolean }> {
    const most = Math.max(1, Math.floor(FOLD_SUMMARIES_MAX * this.share));
    const list = await tx<{ id: string; bytes: number }[]>`
      SELECT summary_id::text AS id, octet_length(summary) + coalesce(octet_length(sessions), 0) AS bytes
      FROM report_summaries ORDER BY summary_id LIMIT ${most + 1}`;
    let behind = list.length > most;
    let taken = Math.min(list.length, most);
    for (let i = 0, bytes = 0; i < taken; i++) {
      bytes += list[i]!.bytes;
      if (i > 0 && bytes > FOLD_SUMMARY_BYTES * this.share) {
        taken = i;
        behind = true;
      }
    }
    const window = new WindowSummaries(begins);
    const ids: string[] = [];
    const turn = new Turns();
    for (let i = 0; i < taken; ) {
      // Fetched a few MiB at a time: a commit's summary is up to ~1 KiB an event.
      const chunk: string[] = [];
      for (let bytes = 0; i < taken && (chunk.length === 0 || bytes + list[i]!.bytes <= READ_BYTES); i++) {
        chunk.push(list[i]!.id);
        bytes += list[i]!.bytes;
      }
      const rows = await tx<{ id: string; summary: Buffer; sessions: Buffer | null }[]>`
        SELECT summary_id::text AS id, summary, sessions FROM report_summaries
        WHERE summary_id = ANY(${chunk}::bigint[]) ORDER BY summary_id`;
      for (const { id, summary, sessions } of rows) {
        try {
          window.add(summary);
        } catch (err) {
          if (err instanceof SummaryFormatError) await this.dropUnreadable(id, err);
          throw err;
        }
        try {
          if (sessions !== null) window.addSessions(sessions);
        } catch (err) {
          if (err instanceof SessionSummaryFormatError) await this.dropUnreadableSessions(id, err);
          throw err;
        }
        ids.push(id);
        const pause = turn.take();
        if (pause) await pause;
      }
      if (window.groups > FOLD_GROUPS * this.share) {
        behind ||= i < list.length;
        break;
      }
    }
    return { window, ids, behind };
  }

  /** As dropUnreadable, for a commit's session records alone: its other counts stay. */
  private async dropUnreadableSessions(id: string, err: Error): Promise<void> {
    await this.sql`UPDATE report_summaries SET sessions = NULL WHERE summary_id = ${id}::bigint`;
    this.log.error(
      { summaryId: id, err: err.message },
      'unreadable session records were deleted: their events are stored but not in the sessions report',
    );
  }

  /**
   * A summary this build could not have written (a bug, a hand edit) would fail every fold that reads it, and the
   * reports of every project would stop: it is deleted, in a transaction of its own, and its events go uncounted.
   */
  private async dropUnreadable(id: string, err: Error): Promise<void> {
    const [gone] = await this.sql<{ from: Date; to: Date }[]>`
      DELETE FROM report_summaries WHERE summary_id = ${id}::bigint RETURNING received_from AS from, received_to AS to`;
    this.log.error(
      { summaryId: id, receivedFrom: gone?.from, receivedTo: gone?.to, err: err.message },
      'an unreadable report summary was deleted: the events it summarized are stored but not reported',
    );
  }
}

/** The watermark row, as a fold reads it (ms since 1970). */
interface Watermark {
  /** Where windows of time ended (null: none yet). */
  at: number | null;
  /** When summaries began (-Infinity: from the start). */
  since: number;
  folds: number;
  changed: string;
}

async function readWatermark(tx: Tx): Promise<Watermark> {
  const [wm] = await tx<{ at: number | null; since: number | null; folds: string; changed: string }[]>`
    SELECT users_changed::text AS changed, folds::text,
           CASE WHEN received_before = '-infinity' THEN NULL ELSE extract(epoch FROM received_before) * 1000 END::float8 AS at,
           -- In whole milliseconds, as windows are: a window ends on it exactly.
           CASE WHEN summaries_since = '-infinity' THEN NULL
                ELSE ceil(extract(epoch FROM summaries_since) * 1000) END::float8 AS since
    FROM report_watermark`;
  return {
    at: wm!.at,
    since: wm!.since ?? Number.NEGATIVE_INFINITY,
    folds: Number(wm!.folds),
    changed: wm!.changed,
  };
}

/** What the fold statements return. */
interface FoldRow {
  events: number;
  sketches: SketchInput[];
}

/**
 * Who the rows no summary holds name: their users, or past TABLE_USERS their projects, or past TABLE_PROJECTS null
 * (every user of the fold is probed, and none remembered).
 */
type NamedOutside = { users: { project_id: string; user_id: string | null }[] } | { projects: Set<string> } | null;

async function namedOutside(tx: Tx, from: string, to: string): Promise<NamedOutside> {
  const users = await tx<{ project_id: string; user_id: string | null }[]>`
    SELECT DISTINCT project_id::text, platform_user_id::text AS user_id FROM events
    WHERE summarized IS NOT TRUE AND received_at > ${from}::text::timestamptz AND received_at <= ${to}::text::timestamptz
    LIMIT ${TABLE_USERS + 1}`;
  if (users.length <= TABLE_USERS) return { users };
  const projects = await tx<{ project_id: string }[]>`
    SELECT DISTINCT project_id::text FROM events
    WHERE summarized IS NOT TRUE AND received_at > ${from}::text::timestamptz AND received_at <= ${to}::text::timestamptz
    LIMIT ${TABLE_PROJECTS + 1}`;
  if (projects.length > TABLE_PROJECTS) return null;
  return { projects: new Set(projects.map((p) => p.project_id)) };
}

/** The report tables as a fold leaves them: the folds so far, and the changes made by others (migration 13). */
const stamp = (folds: number, changed: string) => `${folds} ${changed}`;
