// The single writer of a process: it gathers the rows of many requests and commits them together,
// one transaction per batch on each of a few dedicated connections. A request's promise settles
// only after its batch has committed. A batch leaves for a free connection at once when nothing
// else is being committed, otherwise once its oldest request has waited BATCH_MAX_WAIT_MS; it holds
// at most BATCH_MAX_ROWS rows.
//
// Bounded: rows held above WRITER_MAX_QUEUED_ROWS, and requests that waited WRITE_TIMEOUT_MS for
// a connection, are refused at once (nothing of them was sent). A commit that has not settled after
// WRITE_TIMEOUT_MS is cancelled in the database and answered by what actually happened to it, so a
// 503 never hides rows that were committed.
//
// Dedup is optimistic: rows are COPied straight into `events`; only when that meets an existing
// (project_id, event_id) does the batch run again through a staging table with ON CONFLICT DO NOTHING.
import { classify, DOWN_MS, REQUEST_DATA, RETRIES } from './failure-policy.js';
import { type EventSink, WriteError, type WriteOutcome, type WriteRequest } from './sink.js';
import { PREPARE_STATEMENTS } from './statements.js';
import type { Shard } from './statements.js';
import { commitRequests, type Committed } from './transaction.js';
import { UserRows } from './users.js';
import { type ScriptPart, type QueryResult, WireConnection } from './wire.js';

export interface CommitInfo {
  requests: number;
  rows: number;
  ms: number;
  path: 'copy' | 'staging';
}

/** What the writer needs of a database session: a WireConnection, or a fake in a unit test. */
export interface WriterConnection {
  readonly usable: boolean;
  script(parts: ScriptPart[]): Promise<QueryResult[]>;
  cancel(): Promise<void>;
  close(): void;
}

/** How the writer opens a session (its statements prepared) and commits a batch on it. */
export interface WriterTransport {
  connect(slot: number): Promise<WriterConnection>;
  commit(
    conn: WriterConnection,
    requests: readonly WriteRequest[],
    staged: boolean,
    shard: Shard,
    users: UserRows,
  ): Promise<Committed>;
}

/** PostgreSQL over the writer's own wire client. */
function postgresTransport(o: WriterOptions): WriterTransport {
  return {
    async connect(slot) {
      const conn = await WireConnection.connect({
        url: o.url,
        applicationName: `tg-ingest writer ${slot}`,
        connectTimeoutMs: Math.min(5000, o.writeTimeoutMs),
      });
      const [prepared] = await conn.script([{ sql: PREPARE_STATEMENTS }]);
      if (prepared!.error !== null) {
        conn.close();
        throw prepared!.error;
      }
      return conn;
    },
    commit: commitRequests,
  };
}

export interface WriterOptions {
  /** Another way to reach the database (unit tests); PostgreSQL at `url` by default. */
  transport?: WriterTransport;
  url: string;
  connections: number;
  batchMaxRows: number;
  batchMaxWaitMs: number;
  writeTimeoutMs: number;
  maxQueuedRows: number;
  /** This process's id in the ledger and in allowance leases. */
  instanceId: string;
  onCommit?: (info: CommitInfo) => void;
  /** A batch met stored rows and was redone through staging: ordinary redelivery, not an error. */
  onRedelivery?: () => void;
  onError?: (err: unknown, kind: 'unavailable' | 'refused' | 'retry') => void;
}

interface Pending {
  req: WriteRequest;
  enqueuedAt: number;
  resolve: (o: WriteOutcome) => void;
  reject: (e: WriteError) => void;
}

interface Slot {
  id: number;
  /** Opened before the slot's first batch and after a lost one. */
  conn: WriterConnection | null;
  busy: boolean;
  /** While busy: when its commit began. */
  startedAt: number;
  /** While busy: the batch's oldest request and its smallest, as a rule the two that waited longest on others' rows. */
  oldest: Member;
  smallest: Member;
  /** While busy: the batch's rows. */
  rows: number;
}

/** A request of a batch being committed, as the writer's queue delay reads it. */
interface Member {
  enqueuedAt: number;
  rows: number;
}

class Timeout extends Error {}

/** What a request holds of the writer's bound: its rows and its quarantined events. */
const rowsOf = (req: WriteRequest) => req.batch.rowCount + req.batch.quarantineCount;

/**
 * How long a commit may spend on a request's own rows before the rest counts as waiting (ms a row): 10,000 rows a
 * second per connection, a tenth of what one commits on two shared cores (docs/performance.md).
 */
const OWN_ROW_MS = 0.1;
const NO_MEMBER: Member = { enqueuedAt: 0, rows: 0 };

/**
 * How long a member of the batch a slot commits has waited on others' rows (ms): see queueDelayMs. Its commit's time
 * counts as its own up to OWN_ROW_MS a row, whatever else the batch holds: a share in proportion to its rows would
 * read two heavy requests gathered into one commit as each waiting half the time on the other, while the same two
 * committed side by side on two connections (as slow, on shared cores) would read as waiting on nobody.
 */
function waitedOnOthers(s: Slot, m: Member, now: number): number {
  const elapsed = now - s.startedAt;
  return s.startedAt - m.enqueuedAt + elapsed - Math.min(elapsed, m.rows * OWN_ROW_MS);
}

/** How long a cancelled commit may take to report what became of it. */
const CANCEL_SETTLE_MS = 5000;

export class GroupCommitWriter implements EventSink {
  private readonly queue: Pending[] = [];
  /** Rows queued or committing. */
  private heldRows = 0;
  /** Rows queued, not yet in a batch. */
  private waitingRows = 0;
  private readonly slots: Slot[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** After the database failed, requests are refused at once until then (ms), instead of queueing. */
  private downUntil = 0;
  private readonly users = new UserRows();

  private readonly transport: WriterTransport;

  constructor(private readonly opts: WriterOptions) {
    this.transport = opts.transport ?? postgresTransport(opts);
    for (let i = 0; i < opts.connections; i++)
      this.slots.push({
        id: i,
        conn: null,
        busy: false,
        startedAt: 0,
        oldest: NO_MEMBER,
        smallest: NO_MEMBER,
        rows: 0,
      });
    this.sweeper = setInterval(() => this.expireWaiting(), Math.max(50, Math.min(1000, opts.writeTimeoutMs / 4)));
    this.sweeper.unref();
  }

  private async connection(slot: Slot): Promise<WriterConnection> {
    if (slot.conn?.usable) return slot.conn;
    slot.conn = await this.transport.connect(slot.id);
    return slot.conn;
  }

  get pending(): number {
    let busy = 0;
    for (const s of this.slots) if (s.busy) busy++;
    return this.queue.length + busy;
  }

  /** Whether it holds requests, waiting or committing. */
  get holdsRequests(): boolean {
    return this.queue.length > 0 || this.slots.some((s) => s.busy);
  }

  get queuedRows(): number {
    return this.heldRows;
  }

  /**
   * The writer's queue delay (ms): the longest any request it holds has waited on something other than its own rows,
   * the signal load shedding reads. That is its wait for a commit to begin and, once its batch commits, the commit's
   * time beyond OWN_ROW_MS for each of its own rows. Of a batch being committed, the oldest request and the smallest
   * are read: as a rule they have waited longest (a batch gathers within BATCH_MAX_WAIT_MS; a small request
   * that came late in the gathering can have waited a little longer, and reads a little low). So a
   * 1000-event batch, ~40 ms to commit on an idle database, does not read as a backlog, while a small request in a
   * batch swollen by hundreds of others waits on every one of them, and any commit that stalls (a lock, a failover)
   * soon counts whole. Under normal load it stays within BATCH_MAX_WAIT_MS plus a few ms; it grows when the database
   * takes less than arrives.
   */
  get queueDelayMs(): number {
    const now = performance.now();
    let worst = this.queue.length === 0 ? 0 : now - this.queue[0]!.enqueuedAt;
    for (const s of this.slots) {
      if (!s.busy) continue;
      worst = Math.max(worst, waitedOnOthers(s, s.oldest, now), waitedOnOthers(s, s.smallest, now));
    }
    return worst;
  }

  submit(req: WriteRequest): Promise<WriteOutcome> {
    if (this.closed) return Promise.reject(new WriteError('unavailable', 'the writer is closed'));
    if (performance.now() < this.downUntil)
      return Promise.reject(new WriteError('unavailable', 'the database is unavailable'));
    const rows = rowsOf(req);
    if (this.heldRows + rows > this.opts.maxQueuedRows && this.heldRows > 0) {
      return Promise.reject(
        new WriteError('overloaded', `more than ${this.opts.maxQueuedRows} rows are waiting for the database`),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ req, enqueuedAt: performance.now(), resolve, reject });
      this.heldRows += rows;
      this.waitingRows += rows;
      this.kick();
    });
  }

  drain(): Promise<void> {
    if (!this.holdsRequests) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.kick(true);
    });
  }

  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    clearInterval(this.sweeper);
    for (const s of this.slots) s.conn?.close();
  }

  /** Requests that waited too long for a connection get their answer now; nothing of them was sent. */
  private expireWaiting(): void {
    const limit = performance.now() - this.opts.writeTimeoutMs;
    while (this.queue.length > 0 && this.queue[0]!.enqueuedAt < limit) {
      const p = this.queue.shift()!;
      this.heldRows -= rowsOf(p.req);
      this.waitingRows -= rowsOf(p.req);
      p.reject(new WriteError('overloaded', `waited ${this.opts.writeTimeoutMs} ms for a database connection`));
    }
    this.notifyIdle();
  }

  private kick(now = false): void {
    while (this.queue.length > 0) {
      const slot = this.slots.find((s) => !s.busy);
      if (!slot) return;
      const waited = performance.now() - this.queue[0]!.enqueuedAt;
      // With nothing being committed the batch leaves at once: waiting would only add latency. While
      // another batch commits, it gathers requests for up to BATCH_MAX_WAIT_MS, so that under load
      // commits grow (less CPU per request in both processes) rather than multiply.
      const committing = this.slots.some((s) => s.busy);
      const flushNow =
        now ||
        !committing ||
        this.idleWaiters.length > 0 ||
        this.waitingRows >= this.opts.batchMaxRows ||
        waited >= this.opts.batchMaxWaitMs;
      if (!flushNow) {
        this.timer ??= setTimeout(
          () => {
            this.timer = null;
            this.kick();
          },
          Math.max(1, Math.ceil(this.opts.batchMaxWaitMs - waited)),
        );
        return;
      }
      const batch: Pending[] = [];
      let rows = 0;
      let oldest: Member | null = null;
      let smallest: Member | null = null;
      while (
        this.queue.length > 0 &&
        (batch.length === 0 || rows + rowsOf(this.queue[0]!.req) <= this.opts.batchMaxRows)
      ) {
        const p = this.queue.shift()!;
        const r = rowsOf(p.req);
        rows += r;
        batch.push(p);
        const member = { enqueuedAt: p.enqueuedAt, rows: r };
        oldest ??= member;
        if (smallest === null || r < smallest.rows) smallest = member;
      }
      this.waitingRows -= rows;
      slot.busy = true;
      slot.startedAt = performance.now();
      slot.rows = rows;
      slot.oldest = oldest!;
      slot.smallest = smallest!;
      void this.runBatch(slot, batch).finally(() => {
        this.heldRows -= slot.rows;
        slot.busy = false;
        this.kick();
        this.notifyIdle();
      });
    }
  }

  private notifyIdle(): void {
    if (this.holdsRequests) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Commits a batch. When the database refuses its data, the batch is halved and each half
   * committed on its own, down to single requests: one request's rows cannot sink the others, and
   * finding it costs about 2·log2(requests) commits. Who is to blame is decided once the halving is
   * done: requests refused while others of the batch committed are refused for their own data
   * (400); when every request of a batch of several is refused, or a batch of one is refused for
   * anything but its values (SQLSTATE classes 22, 23, 54), it is the database or the service, and
   * they are answered 503 like an outage.
   */
  private async runBatch(slot: Slot, batch: Pending[]): Promise<void> {
    const refused: { p: Pending; err: unknown }[] = [];
    const committed = await this.bisect(slot, batch, refused);
    if (refused.length === 0) return;
    const systemic =
      committed === 0 &&
      (batch.length > 1 || !REQUEST_DATA.test(String((refused[0]!.err as { code?: unknown }).code ?? '')));
    if (systemic) {
      this.downUntil = performance.now() + DOWN_MS;
      this.opts.onError?.(refused[0]!.err, 'unavailable');
      for (const { p, err } of refused)
        p.reject(new WriteError('unavailable', 'the database refused every request of the batch', err));
      return;
    }
    for (const { p, err } of refused) {
      const code = (err as { code?: string }).code;
      p.reject(
        new WriteError('refused', `the database refused the rows (SQLSTATE ${code}): ${(err as Error).message}`, err),
      );
    }
  }

  /**
   * Commits what it can of `batch`; returns how many requests committed, and adds the ones refused for data to
   * `refused`.
   */
  private async bisect(slot: Slot, batch: Pending[], refused: { p: Pending; err: unknown }[]): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      try {
        const outcomes = await this.commit(slot, batch);
        batch.forEach((p, i) => {
          p.resolve(outcomes[i]!);
        });
        return batch.length;
      } catch (err) {
        const kind = err instanceof Timeout ? 'unavailable' : classify(err);
        this.opts.onError?.(err, kind === 'data' ? 'refused' : kind === 'retry' ? 'retry' : 'unavailable');
        if (kind === 'retry' && attempt < RETRIES) continue;
        if (kind === 'data' && batch.length > 1) {
          const half = Math.ceil(batch.length / 2);
          return (
            (await this.bisect(slot, batch.slice(0, half), refused)) +
            (await this.bisect(slot, batch.slice(half), refused))
          );
        }
        if (kind === 'data') {
          refused.push({ p: batch[0]!, err });
          return 0;
        }
        this.downUntil = performance.now() + DOWN_MS;
        const error = new WriteError('unavailable', 'the database is unavailable', err);
        for (const p of batch) p.reject(error);
        return 0;
      }
    }
  }

  private async commit(slot: Slot, batch: Pending[]): Promise<WriteOutcome[]> {
    const started = performance.now();
    const requests = batch.map((p) => p.req);
    try {
      const out = await this.transaction(slot, requests, false);
      this.opts.onCommit?.({ requests: batch.length, rows: out.rows, ms: performance.now() - started, path: 'copy' });
      return out.outcomes;
    } catch (err) {
      await this.afterFailure(slot, err);
      if (classify(err) !== 'conflict') throw err;
      this.opts.onRedelivery?.();
    }
    try {
      const out = await this.transaction(slot, requests, true);
      this.opts.onCommit?.({
        requests: batch.length,
        rows: out.rows,
        ms: performance.now() - started,
        path: 'staging',
      });
      return out.outcomes;
    } catch (err) {
      await this.afterFailure(slot, err);
      throw err;
    }
  }

  /**
   * The transaction, bounded by WRITE_TIMEOUT_MS. Past it the running statement is cancelled, which
   * rolls the transaction back unless it already committed, and the commit's real fate decides the
   * answer. A connection not even open yet committed nothing.
   */
  private async transaction(slot: Slot, requests: readonly WriteRequest[], staged: boolean): Promise<Committed> {
    let conn: WriterConnection | null = null;
    let abandoned = false;
    const work = this.connection(slot).then((c) => {
      // Opening a connection can outlast the timeout too (its statements are prepared against
      // tables another session may hold locked): the batch was answered by then, so it must not
      // be committed late on it.
      if (abandoned) {
        if (slot.conn === c) this.replaceConnection(slot);
        else c.close();
        throw new Timeout('the connection opened after the batch had been answered');
      }
      conn = c;
      return this.transport.commit(
        c,
        requests,
        staged,
        { instanceId: this.opts.instanceId, connection: slot.id },
        this.users,
      );
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.opts.writeTimeoutMs);
    });
    try {
      const first = await Promise.race([work, timeout]);
      if (first !== 'timeout') return first;
    } finally {
      clearTimeout(timer);
    }
    const running = conn as WriterConnection | null;
    if (running === null) abandoned = true;
    else await running.cancel().catch(() => undefined);
    const settled = await Promise.race([
      work.then(
        (c) => ({ ok: true as const, c }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), running === null ? 0 : CANCEL_SETTLE_MS)),
    ]);
    // Whatever happens next, this connection may carry a late cancel or a half-done transaction.
    work.catch(() => undefined);
    this.replaceConnection(slot);
    if (settled?.ok) return settled.c;
    throw new Timeout(`group commit exceeded ${this.opts.writeTimeoutMs} ms and was cancelled`);
  }

  /**
   * A statement the database refused leaves the transaction open and failed: roll it back. A lost
   * connection took its transaction with it; the next batch opens another.
   */
  private async afterFailure(slot: Slot, err: unknown): Promise<void> {
    if (err instanceof Timeout) return;
    if (classify(err) !== 'unavailable' && slot.conn?.usable) {
      const rolledBack = await slot.conn.script([{ sql: 'ROLLBACK' }]).then(
        () => true,
        () => false,
      );
      if (rolledBack) return;
    }
    this.replaceConnection(slot);
  }

  private replaceConnection(slot: Slot): void {
    slot.conn?.close();
    slot.conn = null;
  }
}
