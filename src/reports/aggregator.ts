// Keeps the report aggregates (migration 9) up to date: every REPORTS_EVERY_MS one instance (an advisory lock) folds
// the events received since its watermark into them, in the transaction that moves the watermark, so each stored
// event counts exactly once however often a window is retried. It stays REPORTS_LAG_MS behind the clock: a request's
// received_at is set before its commit, and a window must not close on rows still being committed. Windows adapt
// to a size a transaction handles in well under a second, so catching up on history never holds locks for long.
// REPORTS_LAG_MS must exceed WRITE_TIMEOUT_MS (a request's longest wait before its transaction begins).
import type { Sql, Tx } from '../db/connect.js';
import { REPORTS_FOLD_LOCK } from '../db/locks.js';
import type { Logger } from '../base/log.js';
import { SessionSummaryFormatError } from '../pipeline/session-summary.js';
import { SummaryFormatError } from '../pipeline/summary.js';
import { Turns } from '../base/turns.js';
import { FiledUsers } from './filed-users.js';
import { Every } from './every.js';
import { FOLD_EVENTS, FOLD_SUMMARIES, FOLD_VERSION, SUMMARIZE } from './fold-sql.js';
import { FOLD_SESSIONS_EVENTS, FOLD_SESSIONS_SUMMARIES } from './session-sql.js';
import { addToSketches, type SketchInput } from './sketch-store.js';
import { WindowSummaries } from './summaries.js';

/**
 * How large a window is, by what it costs: events read from the table, or, from summaries, the groups they make (a
 * group's probes of the report tables are most of a window's cost; a million summarized events of 8,000 users fold in
 * about the time of 100,000 of 100,000).
 */
const TARGET_ROWS = 100_000;
const MIN_STEP_MS = 1000;
/** A window never spans more than this, however sparse the events: a dense stretch after it stays bounded. */
const MAX_STEP_MS = 3_600_000;
/**
 * What one window of summaries may take, unless it is as small as a window gets: bytes of summaries (about 16 an
 * event), summaries (a commit's each: the list held to fetch them), and rows they group into (the JavaScript maps
 * that hold them, and the fold's probes).
 */
const WINDOW_SUMMARY_BYTES = 32 * 1024 * 1024;
const WINDOW_SUMMARIES = 200_000;
const WINDOW_GROUPS = 4 * TARGET_ROWS;
/** Summaries fetched per query, by their bytes. */
const READ_BYTES = 4 * 1024 * 1024;
/** Users a window's rows no summary holds may name before every user of their projects is probed (as before FiledUsers). */
const TABLE_USERS = 10_000;
/** Projects those rows may name before every user of the window is probed, and none remembered. */
const TABLE_PROJECTS = 1_000;
/** The writer connections, by the application_name the writer gives them (src/writer/group-commit.ts). */
const WRITERS = 'tg-ingest writer %';
/** How long an open writer transaction can hold the watermark back. */
const HOLD_BACK_MAX = '10 minutes';
export interface AggregatorOptions {
  everyMs: number;
  lagMs: number;
}

export interface WindowResult {
  from: string;
  to: string;
  events: number;
  /** The window's size by TARGET_ROWS: events read from the table, or groups made of summaries. */
  rows: number;
  /** Whether the window stopped short of now − lag (its step, or where summaries began): more is there to fold. */
  behind: boolean;
}

export class ReportAggregator {
  /**
   * Window sizes, one for each source. Events read from the table start from the smallest window up: an instance that
   * starts after others ran (a restart, a new instance) would otherwise fold a minute of busy traffic in its first
   * transaction, seconds long, while an erasure waits for the lock. Summaries start from the largest, bounded by
   * WINDOW_SUMMARY_BYTES: a window costs about the same whatever its length (a probe of each user it names), so the
   * fewer the better.
   */
  private readonly step = { events: MIN_STEP_MS, summaries: MAX_STEP_MS };
  private readonly filed = new FiledUsers();
  private readonly every: Every;
  /** A catch-up under way ends after its window. */
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly opts: AggregatorOptions,
    private readonly log: Logger,
  ) {
    this.every = new Every(
      opts.everyMs,
      () => this.catchUp(),
      (err, failures) => {
        // Smaller windows next time: a window too big for its transaction is split until it passes.
        this.step.events = Math.max(MIN_STEP_MS, this.step.events / 4);
        this.step.summaries = Math.max(MIN_STEP_MS, this.step.summaries / 4);
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
   * The window's report summaries, grouped; null when they are more than a window may take (WINDOW_SUMMARY_BYTES,
   * WINDOW_SUMMARIES, WINDOW_GROUPS) and the window can shrink. Deletes those folded whole, and those the watermark left behind: before
   * summaries began (their events were read from the table), or from a request stamped by a clock further behind the
   * database's than REPORTS_LAG_MS (its events are stored and billed, but not reported: logged).
   */
  private async readSummaries(tx: Tx, from: string, to: string, since: number): Promise<WindowSummaries | null> {
    const [stale] = await tx<{ late: number }[]>`
      WITH gone AS (DELETE FROM report_summaries WHERE received_to <= ${from} RETURNING received_to)
      SELECT count(*) FILTER (WHERE received_to > ${new Date(Math.max(since, 0)).toISOString()})::int AS late FROM gone`;
    if (stale!.late > 0)
      this.log.warn({ summaries: stale!.late, watermark: from }, 'report summaries received behind the watermark');
    // A commit's requests arrive within WRITE_TIMEOUT_MS of each other, and the watermark waits HOLD_BACK_MAX at most
    // for a commit: no summary spans more, so the list stays the window's, however long the backlog behind it.
    const shrinkable = this.step.summaries > MIN_STEP_MS;
    // Listed up to one past the bound while the window can shrink: a backlog (after an outage, say) is not listed
    // whole only to be dropped. (LIMIT NULL: all.)
    const list = await tx<{ id: string; done: boolean; bytes: number }[]>`
      SELECT summary_id::text AS id, received_to <= ${to} AS done,
             octet_length(summary) + coalesce(octet_length(sessions), 0) AS bytes
      FROM report_summaries
      WHERE received_from > ${from}::timestamptz - ${HOLD_BACK_MAX}::interval AND received_from <= ${to}
        AND received_to > ${from}
      ORDER BY summary_id
      LIMIT ${shrinkable ? WINDOW_SUMMARIES + 1 : null}`;
    if (shrinkable && (list.length > WINDOW_SUMMARIES || list.reduce((n, s) => n + s.bytes, 0) > WINDOW_SUMMARY_BYTES))
      return null;
    const window = new WindowSummaries(Date.parse(from), Date.parse(to));
    const turn = new Turns();
    for (let i = 0; i < list.length; ) {
      // Fetched a few MiB at a time: a commit's summary is up to ~1 KiB an event.
      const ids: string[] = [];
      for (let bytes = 0; i < list.length && (ids.length === 0 || bytes + list[i]!.bytes <= READ_BYTES); i++) {
        ids.push(list[i]!.id);
        bytes += list[i]!.bytes;
      }
      const rows = await tx<{ id: string; summary: Buffer; sessions: Buffer | null }[]>`
        SELECT summary_id::text AS id, summary, sessions FROM report_summaries WHERE summary_id = ANY(${ids}::bigint[])`;
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
        if (shrinkable && window.groups > WINDOW_GROUPS) return null;
        const pause = turn.take();
        if (pause) await pause;
      }
    }
    const done = list.filter((s) => s.done).map((s) => s.id);
    if (done.length > 0) await tx`DELETE FROM report_summaries WHERE summary_id = ANY(${done}::bigint[])`;
    return window;
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
   * A summary this build could not have written (a bug, a hand edit) would fail every window that reads it, and the
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

  /**
   * Windows until one reaches now − lag as it was when it began (or another instance holds the lock). Not as it is
   * when it ends: a window of a busy stretch takes a second or more, and a second window at once, of that second
   * alone, would probe every one of its users again (measured: ~0.6 s of a 1.5 s window's cost, for 5% of its events).
   */
  async catchUp(): Promise<void> {
    for (;;) {
      const w = await this.fold();
      if (w === null || !w.behind || this.stopped) return;
    }
  }

  /** One window; null when another instance holds the lock or there is nothing new to close. */
  async fold(): Promise<WindowResult | null> {
    const started = performance.now();
    let source: keyof ReportAggregator['step'] = 'events';
    // What the window filed, told to this.filed once its transaction has committed.
    let afterCommit: (() => void | Promise<void>) | null = null;
    const result = (await this.sql.begin(async (tx) => {
      const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${REPORTS_FOLD_LOCK}) AS ok`;
      if (!lock?.ok) return null;
      // The version lets the watermark move (migration 10's guard); `folding` leaves this transaction's own changes
      // to report_users and report_active uncounted by migration 13's triggers.
      await tx`SELECT set_config('tg_ingest.fold_version', ${FOLD_VERSION}, true), set_config('tg_ingest.folding', 'on', true)`;
      const w = await this.nextWindow(tx);
      if (w === null) return null;
      source = w.source;
      const { from, to, behind } = w;
      // A window's grouping stays in memory: spilled to disk it cost the fold twice as much (measured).
      await tx`SET LOCAL work_mem = '64MB'`;
      // The planner expects many groups and sorts a million rows on disk; hashed, they fit in a few MB (measured:
      // 3.6 s against 1.4 s for 900,000 events).
      await tx`SET LOCAL enable_sort = off`;
      let folded: Folded;
      if (source === 'events') {
        // BRIN summaries in a short transaction of their own, never waiting: its lock would hold off vacuum.
        await this.summarizeBrin(from, to);
        const [row] = await tx.unsafe<FoldRow[]>(FOLD_EVENTS, [from, to]);
        // Each session probed by its key, as the summaries' fold does (there, with seq scans off already).
        await tx`SET LOCAL enable_seqscan = off`;
        await tx.unsafe(FOLD_SESSIONS_EVENTS, [from, to]);
        await tx`SET LOCAL enable_seqscan TO DEFAULT`;
        folded = { row: row!, rows: row!.events };
      } else {
        const f = await this.foldSummaries(tx, w);
        if (f === 'too big') return { from, to, events: Number.NaN, rows: Number.NaN, behind };
        afterCommit = f.afterCommit;
        // A quiet window folds nothing; its watermark moves all the same.
        folded = { row: f.row ?? { events: 0, sketches: [] }, rows: f.rows };
      }
      await addToSketches(tx, folded.row.sketches);
      await tx`UPDATE report_watermark SET received_before = ${to}`;
      return { from, to, events: folded.row.events, rows: folded.rows, behind };
    })) as WindowResult | null;
    await (afterCommit as (() => void | Promise<void>) | null)?.();
    if (result === null) return null;
    if (Number.isNaN(result.events)) {
      // More summaries than a window may read at once: a smaller window, at once.
      this.step.summaries = Math.max(MIN_STEP_MS, this.step.summaries / 4);
      return this.fold();
    }
    this.log.debug({ ...result, source, ms: Math.round(performance.now() - started) }, 'report window folded');
    // Windows of about TARGET_ROWS: halved after a heavy one, doubled after a light one.
    if (result.rows > TARGET_ROWS * 2) this.step[source] = Math.max(MIN_STEP_MS, this.step[source] / 2);
    else if (result.rows < TARGET_ROWS / 2) this.step[source] = Math.min(MAX_STEP_MS, this.step[source] * 2);
    return result;
  }

  /**
   * The window to fold next, read from the watermark (its row locked for the transaction); null when there is none
   * yet. It ends at now − lag, at most a step from its start, and never spans where summaries began.
   */
  private async nextWindow(tx: Tx): Promise<FoldWindow | null> {
    // The database's clock, not this instance's: every instance's requests are judged by one clock.
    // A window closes REPORTS_LAG_MS behind the start of the oldest writer transaction still open (or behind
    // now): the lag covers a request's wait for its transaction (at most WRITE_TIMEOUT_MS), and a transaction slow
    // to commit (a standby that has not confirmed, a failover) holds the watermark back while it runs, so its rows
    // are never passed over. Only the service's writers count (a psql session left open does not), for at most
    // HOLD_BACK_MAX.
    // A hand edit of report_users or report_active left open holds this row (migration 13): the fold gives way and
    // tries again later, rather than hold the lock erasures wait for.
    await tx`SET LOCAL lock_timeout = '2s'`;
    const [wm] = await tx<{ at: number | null; now: number; since: number; changed: string }[]>`
      SELECT users_changed::text AS changed, CASE WHEN received_before = '-infinity' THEN NULL
                  ELSE extract(epoch FROM received_before) * 1000 END::float8 AS at,
             (extract(epoch FROM least(now(), (
               SELECT min(greatest(xact_start, now() - ${HOLD_BACK_MAX}::interval)) FROM pg_stat_activity
               WHERE datname = current_database() AND application_name LIKE ${WRITERS} AND backend_xid IS NOT NULL
             ))) * 1000)::float8 AS now,
             -- In whole milliseconds, as windows are: a window ends on it exactly.
             ceil(extract(epoch FROM summaries_since) * 1000)::float8 AS since
      FROM report_watermark FOR UPDATE`;
    await tx`SET LOCAL lock_timeout TO DEFAULT`;
    const until = new Date(wm!.now - this.opts.lagMs);
    let from = wm!.at === null ? '-infinity' : new Date(wm!.at).toISOString();
    if (from === '-infinity') {
      // The first run: from the oldest stored event (the oldest partition that holds one, read once), or, with
      // none, from now on. Stepping through empty months in hour-long windows would keep the database busy.
      const parts = await tx<{ name: string }[]>`
        SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$' ORDER BY 1`;
      let oldest: Date | null = null;
      for (const { name } of parts) {
        const [m] = await tx.unsafe<{ at: Date | null }[]>(`SELECT min(received_at) AS at FROM ${name}`);
        if (m?.at) {
          oldest = m.at;
          break;
        }
      }
      from = new Date((oldest ?? until).getTime() - 1).toISOString();
      if (oldest === null) {
        await tx`UPDATE report_watermark SET received_before = ${from}`;
        return null;
      }
    }
    const fromMs = Date.parse(from);
    if (!(fromMs < until.getTime())) return null;
    // Events received before summaries began are read from the table; a window never mixes the two.
    const since = wm!.since;
    const source = fromMs < since ? 'events' : 'summaries';
    // Whole milliseconds, as the watermark is stored and read back (steps halve and quarter into fractions).
    let toMs = Math.floor(Math.min(until.getTime(), fromMs + this.step[source]));
    if (fromMs < since && toMs > since) toMs = since;
    return {
      source,
      from,
      to: new Date(toMs).toISOString(),
      since,
      behind: toMs < until.getTime(),
      stampBefore: stamp(wm!.at, wm!.changed),
      stampAfter: stamp(toMs, wm!.changed),
    };
  }

  /**
   * A window's summaries, folded. 'too big' when it holds more than a window may read at once; `row` null when it
   * holds nothing. `afterCommit` tells this.filed what the fold filed, once it has committed.
   */
  private async foldSummaries(
    tx: Tx,
    w: FoldWindow,
  ): Promise<'too big' | { row: FoldRow | null; rows: number; afterCommit: () => void | Promise<void> }> {
    const { from, to } = w;
    // Every report table is read by key here. Planned on the statistics of a table that was empty when last
    // analyzed, a probe per user became a scan of the whole table per user (8,000 users: 0.7 s against 0.05 s).
    await tx`SET LOCAL enable_seqscan = off`;
    this.filed.check(w.stampBefore);
    const window = await this.readSummaries(tx, from, to, w.since);
    if (window === null) return 'too big';
    // The window's rows no summary holds (a commit that met a redelivery and went through the staging table, with every
    // request committed beside it; a user id past 2^53; a row by hand): their users go through the probes, as they may
    // name a campaign; past TABLE_USERS, every user of their projects does, and only theirs. What that costs is the
    // probes the memory saves, never a count.
    const outside = await namedOutside(tx, from, to);
    if (window.groups === 0 && outside !== null && 'users' in outside && outside.users.length === 0)
      return { row: null, rows: 0, afterCommit: () => this.filed.settle(w.stampAfter) };
    let remember = outside !== null;
    if (outside === null) this.filed.clear();
    else if ('users' in outside) {
      for (const o of outside.users) if (o.user_id !== null) window.mark(o.project_id, Number(o.user_id), true);
    } else {
      for (const projectId of outside.projects) window.markProject(projectId);
    }
    const base = await window.rows(remember ? this.filed : null);
    const [row] = await tx.unsafe<FoldRow[]>(FOLD_SUMMARIES, [
      from,
      to,
      base.projectIds,
      base.days,
      base.types,
      base.users,
      base.campaigns,
      base.paymentIds,
      base.counts,
      base.firstAt,
      base.lastAt,
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
    // Each statement reads its own snapshot (READ COMMITTED): a row committed into the window after the read above
    // was folded without its user marked. Read again now, anything named and not marked makes the memory unsure.
    if (remember && !covers(window, await namedOutside(tx, from, to))) {
      this.filed.clear();
      remember = false;
    }
    return {
      row: row!,
      rows: window.groups,
      afterCommit: async () => {
        if (!remember) return;
        await window.fileInto(this.filed);
        this.filed.settle(w.stampAfter);
      },
    };
  }
}

/** The window a fold closes, as nextWindow chose it. */
interface FoldWindow {
  source: 'events' | 'summaries';
  from: string;
  to: string;
  /** ms since 1970: where summaries began. */
  since: number;
  behind: boolean;
  /** The report tables as the last fold left them, and as this one will (FiledUsers). */
  stampBefore: string;
  stampAfter: string;
}

/** What the fold statements return. */
interface FoldRow {
  events: number;
  sketches: SketchInput[];
}

/** A folded window: its statement's row, and its size by TARGET_ROWS. */
interface Folded {
  row: FoldRow;
  rows: number;
}

/**
 * Who the window's rows that no summary holds name: their users, or past TABLE_USERS their projects, or past
 * TABLE_PROJECTS null (every user of the window is probed, and none remembered).
 */
type NamedOutside = { users: { project_id: string; user_id: string | null }[] } | { projects: Set<string> } | null;

async function namedOutside(tx: Tx, from: string, to: string): Promise<NamedOutside> {
  const users = await tx<{ project_id: string; user_id: string | null }[]>`
    SELECT DISTINCT project_id::text, platform_user_id::text AS user_id FROM events
    WHERE summarized IS NOT TRUE AND received_at > ${from} AND received_at <= ${to}
    LIMIT ${TABLE_USERS + 1}`;
  if (users.length <= TABLE_USERS) return { users };
  const projects = await tx<{ project_id: string }[]>`
    SELECT DISTINCT project_id::text FROM events
    WHERE summarized IS NOT TRUE AND received_at > ${from} AND received_at <= ${to}
    LIMIT ${TABLE_PROJECTS + 1}`;
  if (projects.length > TABLE_PROJECTS) return null;
  return { projects: new Set(projects.map((p) => p.project_id)) };
}

/** Whether the window marked everyone `named` names (WindowSummaries.mark, markProject). */
function covers(window: WindowSummaries, named: NamedOutside): boolean {
  if (named === null) return false;
  if ('projects' in named) return [...named.projects].every((p) => window.marksProject(p));
  return named.users.every((u) => u.user_id === null || window.marksUser(u.project_id, Number(u.user_id)));
}

/** The report tables as a fold leaves them: its watermark, and the changes made by others (migration 13). */
const stamp = (watermark: number | null, changed: string) => `${watermark} ${changed}`;
