// The single writer of a process: it gathers the rows of many requests and commits them together
// (a batch closes on a row count or after a few milliseconds), one transaction per batch on each
// of a few dedicated connections. A request's promise settles only after its batch has committed.
//
// Dedup is optimistic: rows are COPied straight into `events`; only when that meets an existing
// (project_id, event_id) does the batch run again through a staging table with ON CONFLICT DO NOTHING.
import { connect, type Sql } from '../db/connect.js';
import type { ActionRef, BotSnapshot, UserSeen } from '../pipeline/batch.js';
import { copyIn, type Session, SessionLost, sameSession } from './copy-in.js';
import { RecentUsers } from './recent-users.js';
import {
  BEGIN_COPY_EVENTS, BEGIN_COPY_STAGING, type BotRow, insertStaged, recordSightings, settleBilling, updateBots, upsertUsers, type UserRow,
} from './statements.js';

export interface WriteRequest {
  projectId: string;
  botId: string;
  /** The billing connection: channel plus credential ("token:<id>", "webapp:<botId>"). */
  connection: string;
  receivedAt: string;
  /** COPY text of complete rows (billed = t). */
  rows: Uint8Array;
  rowCount: number;
  actions: ActionRef[];
  /** Users seen in the events, without a profile. */
  userIds: string[];
  profiles: UserSeen[];
  /** True when `profiles` come from verified initData and replace stored ones. */
  authoritativeProfiles: boolean;
  bot: BotSnapshot | null;
}

export interface WriteOutcome {
  /** Rows this request added to `events`. */
  stored: number;
  billed: number;
  /** Stored with billed = false: another connection reported the same action first. */
  storedNotBilled: number;
  /** Accepted events already stored by an earlier request: not stored or billed again. */
  redelivered: number;
}

export type WriteFailure = 'unavailable' | 'internal';

export class WriteError extends Error {
  constructor(readonly kind: WriteFailure, message: string, override readonly cause?: unknown) {
    super(message);
    this.name = 'WriteError';
  }
}

export interface CommitInfo {
  requests: number;
  rows: number;
  ms: number;
  path: 'copy' | 'staging';
}

export interface WriterOptions {
  url: string;
  connections: number;
  batchMaxRows: number;
  batchMaxWaitMs: number;
  writeTimeoutMs: number;
  onCommit?: (info: CommitInfo) => void;
  onError?: (err: unknown, kind: WriteFailure | 'retry' | 'conflict') => void;
}

interface Pending {
  req: WriteRequest;
  total: number;
  enqueuedAt: number;
  resolve: (o: WriteOutcome) => void;
  reject: (e: WriteError) => void;
}

interface Slot {
  id: number;
  sql: Sql;
  busy: boolean;
}

const RETRIES = 3;
/** How long a failed database is left alone before the next batch tries it again. */
const DOWN_MS = 500;

type Failure = 'conflict' | 'retry' | 'unavailable' | 'data';

function classify(err: unknown): Failure {
  const e = err as { code?: string; constraint_name?: string };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === '23505' && e.constraint_name === 'events_project_event_key') return 'conflict';
  if (code === '40P01' || code === '40001') return 'retry';
  // SQLSTATE classes 22, 23, 42, XX: the data or the statement; anything else is the database's state.
  if (/^(22|23|42|XX)[0-9A-Z]{3}$/.test(code)) return 'data';
  return 'unavailable';
}

class Timeout extends Error {}

export class Writer {
  private readonly queue: Pending[] = [];
  private queuedRows = 0;
  private readonly slots: Slot[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** After the database failed, requests are refused at once until then (ms), instead of queueing. */
  private downUntil = 0;
  /** Users written within the last minute are not written again (last_seen has minute resolution). */
  private readonly recentUsers = new RecentUsers(60_000, 500_000);

  constructor(private readonly opts: WriterOptions) {
    for (let i = 0; i < opts.connections; i++) this.slots.push({ id: i, sql: this.newSql(i), busy: false });
  }

  private newSql(i: number): Sql {
    // One max:1 client per connection: a COPY must never share a connection with queued queries.
    // Custom plans: a generic plan knows nothing of the arrays the statements unnest and chose a
    // sequential scan of events for the billing statement (measured: 50M rows read in 4 s).
    return connect(this.opts.url, { max: 1, name: `tg-ingest writer ${i}`, settings: { plan_cache_mode: 'force_custom_plan' } });
  }

  get pendingRequests(): number {
    return this.queue.length + this.slots.filter((s) => s.busy).length;
  }

  submit(req: WriteRequest): Promise<WriteOutcome> {
    if (this.closed) return Promise.reject(new WriteError('unavailable', 'the writer is closed'));
    if (performance.now() < this.downUntil) return Promise.reject(new WriteError('unavailable', 'the database is unavailable'));
    return new Promise((resolve, reject) => {
      const total = req.rowCount;
      this.queue.push({ req, total, enqueuedAt: performance.now(), resolve, reject });
      this.queuedRows += total;
      this.kick();
    });
  }

  /** Resolves once everything submitted so far has settled. */
  drain(): Promise<void> {
    if (this.queue.length === 0 && this.slots.every((s) => !s.busy)) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.kick(true);
    });
  }

  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(this.slots.map((s) => s.sql.end({ timeout: 5 })));
  }

  private kick(now = false): void {
    while (this.queue.length > 0) {
      const slot = this.slots.find((s) => !s.busy);
      if (!slot) return;
      const waited = performance.now() - this.queue[0]!.enqueuedAt;
      const flushNow = now || this.idleWaiters.length > 0 || this.queuedRows >= this.opts.batchMaxRows || waited >= this.opts.batchMaxWaitMs;
      if (!flushNow) {
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.kick();
        }, Math.max(1, Math.ceil(this.opts.batchMaxWaitMs - waited)));
        return;
      }
      const batch: Pending[] = [];
      let rows = 0;
      while (this.queue.length > 0 && (batch.length === 0 || rows + this.queue[0]!.total <= this.opts.batchMaxRows)) {
        const p = this.queue.shift()!;
        rows += p.total;
        batch.push(p);
      }
      this.queuedRows -= rows;
      slot.busy = true;
      void this.runBatch(slot, batch).finally(() => {
        slot.busy = false;
        this.kick();
        if (this.queue.length === 0 && this.slots.every((s) => !s.busy)) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const w of waiters) w();
        }
      });
    }
  }

  /** Commits a batch, splitting it when one request's rows are refused so the others still commit. */
  private async runBatch(slot: Slot, batch: Pending[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const outcomes = await this.withTimeout(slot, () => this.commit(slot, batch));
        batch.forEach((p, i) => p.resolve(outcomes[i]!));
        return;
      } catch (err) {
        const kind = err instanceof Timeout ? 'unavailable' : classify(err);
        this.opts.onError?.(err, kind === 'data' ? 'internal' : kind);
        if (kind === 'retry' && attempt < RETRIES) continue;
        if (kind === 'data' && batch.length > 1) {
          for (const p of batch) await this.runBatch(slot, [p]);
          return;
        }
        const failure: WriteFailure = kind === 'data' ? 'internal' : 'unavailable';
        if (failure === 'unavailable') this.downUntil = performance.now() + DOWN_MS;
        const error = new WriteError(failure, failure === 'internal' ? 'the database refused the rows' : 'the database is unavailable', err);
        for (const p of batch) p.reject(error);
        return;
      }
    }
  }

  private async withTimeout<T>(slot: Slot, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Timeout(`group commit exceeded ${this.opts.writeTimeoutMs} ms`)), this.opts.writeTimeoutMs);
    });
    const work = fn();
    try {
      return await Promise.race([work, timeout]);
    } catch (err) {
      if (err instanceof Timeout) {
        // The connection may be stuck mid-transaction: replace it. Whatever it still commits is
        // redelivered harmlessly when the client retries.
        work.catch(() => undefined);
        this.replaceConnection(slot);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async commit(slot: Slot, batch: Pending[]): Promise<WriteOutcome[]> {
    const started = performance.now();
    try {
      const out = await this.transaction(slot, batch, false);
      this.opts.onCommit?.({ requests: batch.length, rows: out.rows, ms: performance.now() - started, path: 'copy' });
      return out.outcomes;
    } catch (err) {
      await this.afterFailure(slot, err);
      if (classify(err) !== 'conflict') throw err;
      this.opts.onError?.(err, 'conflict');
    }
    try {
      const out = await this.transaction(slot, batch, true);
      this.opts.onCommit?.({ requests: batch.length, rows: out.rows, ms: performance.now() - started, path: 'staging' });
      return out.outcomes;
    } catch (err) {
      await this.afterFailure(slot, err);
      throw err;
    }
  }

  /**
   * A statement the database refused leaves a live connection in an aborted transaction: roll it
   * back. Anything else may leave statements queued for postgres.js's silent reconnect, which would
   * run them on a fresh session: that connection is dropped and replaced, with everything queued.
   */
  private async afterFailure(slot: Slot, err: unknown): Promise<void> {
    if (classify(err) !== 'unavailable') {
      await slot.sql.unsafe('ROLLBACK').catch(() => undefined);
      return;
    }
    this.replaceConnection(slot);
  }

  private replaceConnection(slot: Slot): void {
    const old = slot.sql;
    slot.sql = this.newSql(slot.id);
    void old.end({ timeout: 0 }).catch(() => undefined);
  }

  private async transaction(slot: Slot, batch: Pending[], staged: boolean): Promise<{ outcomes: WriteOutcome[]; rows: number }> {
    const sql = slot.sql;
    // Three round trips: BEGIN with the COPY statement; the rows; then billing, profiles and COMMIT
    // together. postgres.js sends a query only when it is first awaited, so each later statement is
    // created with execute(), in order: an `await` inside a helper would let COMMIT overtake it.
    // Each must run in the COPY's session: postgres.js runs a statement queued across a reconnect on
    // a new session, outside this transaction, so the billing statement checks and every result is.
    const data = batch.length === 1 ? batch[0]!.req.rows : Buffer.concat(batch.map((p) => p.req.rows));
    const session = await copyIn(sql, staged ? BEGIN_COPY_STAGING : BEGIN_COPY_EVENTS, data);

    let stored: number[];
    if (!staged) stored = batch.map((p) => p.total);
    else {
      const bounds: number[] = [];
      let next = 1;
      for (const p of batch) {
        bounds.push(next);
        next += p.total;
      }
      stored = batch.map(() => 0);
      for (const c of await insertStaged(sql, bounds, session)) stored[c.req] = c.inserted;
    }

    const claims = batch.flatMap((p, req) => p.req.actions.map((a) => ({ projectId: p.req.projectId, key: a.key, connection: p.req.connection, eventId: a.eventId, req })));
    const perProject = new Map<string, number>();
    batch.forEach((p, i) => perProject.set(p.req.projectId, (perProject.get(p.req.projectId) ?? 0) + stored[i]!));
    const settled = settleBilling(sql, claims, [...perProject].map(([projectId, n]) => ({ projectId, stored: n })), slot.id, session);
    const statements: Promise<unknown>[] = [settled];
    const users = this.usersToWrite(batch);
    if (users.sightings.ids.length > 0) statements.push(recordSightings(sql, users.sightings.projects, users.sightings.ids).execute());
    if (users.partial.length > 0) statements.push(upsertUsers(sql, users.partial, false).execute());
    if (users.authoritative.length > 0) statements.push(upsertUsers(sql, users.authoritative, true).execute());
    const bots = latestBots(batch);
    if (bots.length > 0) statements.push(updateBots(sql, bots).execute());
    // Pipelined: COMMIT only reports ROLLBACK if a statement before it failed, so check each.
    const commit = sql.unsafe('COMMIT').execute();
    const results = await Promise.allSettled([...statements, commit]);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    // A COMMIT that ran on another session committed nothing of ours.
    if (!sameSession((results[results.length - 1] as PromiseFulfilledResult<{ state: Session }>).value.state, session)) throw new SessionLost();
    for (const w of users.written) this.recentUsers.remember(w.projectId, w.userId, w.fingerprint);

    const unbilled = await settled;
    const outcomes = batch.map((p, i) => {
      const n = unbilled.get(i) ?? 0;
      return { stored: stored[i]!, billed: stored[i]! - n, storedNotBilled: n, redelivered: p.total - stored[i]! };
    });
    return { outcomes, rows: batch.reduce((n, p) => n + p.total, 0) };
  }

  /** The user rows this batch must write: what was not written lately, merged per user. */
  private usersToWrite(batch: Pending[]) {
    this.recentUsers.tick();
    const recent = this.recentUsers;
    const sightings = { projects: [] as string[], ids: [] as string[] };
    const partial = new Map<string, UserRow>();
    const authoritative = new Map<string, UserRow>();
    const written: { projectId: string; userId: string; fingerprint: string }[] = [];
    // Profiles first: a user with a profile in this batch needs no separate sighting.
    const profiled = new Set<string>();
    for (const p of batch) {
      const projectId = p.req.projectId;
      const target = p.req.authoritativeProfiles ? authoritative : partial;
      for (const u of p.req.profiles) {
        const fingerprint = `${p.req.authoritativeProfiles ? 'a' : 'p'}${JSON.stringify(u)}`;
        if (recent.fresh(projectId, u.id, fingerprint)) continue;
        const key = `${projectId}:${u.id}`;
        profiled.add(key);
        written.push({ projectId, userId: u.id, fingerprint });
        const prev = target.get(key);
        target.set(key, prev === undefined ? { ...u, projectId } : { ...prev, ...definedOnly(u) });
      }
    }
    const sighted = new Set<string>();
    for (const p of batch) {
      const projectId = p.req.projectId;
      for (const id of p.req.userIds) {
        if (recent.fresh(projectId, id)) continue;
        const key = `${projectId}:${id}`;
        if (profiled.has(key) || sighted.has(key)) continue;
        sighted.add(key);
        written.push({ projectId, userId: id, fingerprint: '' });
        sightings.projects.push(projectId);
        sightings.ids.push(id);
      }
    }
    return { sightings, partial: [...partial.values()], authoritative: [...authoritative.values()], written };
  }
}

function definedOnly(u: UserSeen): Partial<UserSeen> {
  const out: Partial<UserSeen> = {};
  for (const [k, v] of Object.entries(u)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

function latestBots(batch: Pending[]): BotRow[] {
  const bots = new Map<string, BotRow>();
  for (const p of batch) if (p.req.bot !== null) bots.set(p.req.botId, { ...p.req.bot, botId: p.req.botId });
  return [...bots.values()];
}
