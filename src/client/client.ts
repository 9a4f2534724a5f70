// Queue, batching and reporting. Events wait in a FIFO; a batch leaves when it is full, when the
// oldest queued event has waited flushIntervalMs, or on flush()/close(). Every event ends up in
// exactly one of: accepted, rejected, failed, and each of the last two reaches a callback or the
// next flush() report.
import { deliver, type Outcome } from './deliver.js';
import { IngestError } from './errors.js';
import type { Endpoint } from './retry.js';
import { send, type TransportConfig } from './transport.js';
import type {
  BotSnapshot, ClientOptions, Diagnostic, FlushReport, ServerClientOptions,
  ServerEventInput, Stamped, UserProfile, WebAppClientOptions, WebAppEventInput,
} from './types.js';

export const MAX_BATCH_EVENTS = 1000;
/** Profiles sent with one request; the rest wait for the next. */
const MAX_USERS_PER_REQUEST = 1000;

interface Queued<E> {
  seq: number;
  event: Stamped<E>;
}

interface Batch {
  firstSeq: number;
  size: number;
}

export class IngestClient<E extends object> {
  private readonly mode: Endpoint;
  private readonly transport: TransportConfig;
  private readonly maxBatch: number;
  private readonly flushIntervalMs: number;
  private readonly maxQueue: number;
  private readonly maxConcurrent: number;
  private readonly opts: ClientOptions;

  private queue: Queued<E>[] = [];
  private readonly inFlight = new Set<Batch>();
  private inFlightEvents = 0;
  private seq = 0;
  /** Events up to this seq are due now (timer fired or flush() asked). */
  private dueSeq = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private waiters: { seq: number; resolve: (r: FlushReport<E>) => void }[] = [];
  private report: FlushReport<E> = emptyReport();
  private users = new Map<string, UserProfile>();
  private bot: BotSnapshot | null = null;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.mode = 'apiKey' in opts ? 'server' : 'webapp';
    this.maxBatch = clamp(opts.maxBatchEvents ?? MAX_BATCH_EVENTS, 1, MAX_BATCH_EVENTS);
    this.flushIntervalMs = Math.max(0, opts.flushIntervalMs ?? 1000);
    this.maxQueue = Math.max(1, opts.maxQueueEvents ?? 100_000);
    this.maxConcurrent = Math.max(1, opts.maxConcurrentRequests ?? 2);
    const base = opts.baseUrl.replace(/\/+$/, '');
    const fetchImpl = opts.fetch ?? ((input: Parameters<typeof fetch>[0], init?: RequestInit) => globalThis.fetch(input, init));
    this.transport = {
      endpoint: this.mode,
      url: this.mode === 'server' ? `${base}/tg` : `${base}/tg/webapp`,
      // text/plain on A spares a browser the CORS preflight (gzip bodies need one anyway).
      headers: this.mode === 'server'
        ? { 'Content-Type': 'application/json', 'X-API-Key': (opts as ServerClientOptions).apiKey }
        : { 'Content-Type': 'text/plain;charset=UTF-8' },
      fetch: fetchImpl,
      requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
      gzipMinBytes: opts.gzipMinBytes ?? 16 * 1024,
      maxRetries: Math.max(0, opts.maxRetries ?? 8),
      retryBaseMs: opts.retryBaseMs ?? 250,
      retryMaxMs: opts.retryMaxMs ?? 30_000,
    };
  }

  /** Events queued or in flight. */
  get pending(): number {
    return this.queue.length + this.inFlightEvents;
  }

  /**
   * Queues an event and returns it as it will be sent (with its eventId and eventDate). A closed
   * client or a full queue reports the event to onFailed, or throws an IngestError without one.
   */
  track(event: E): Stamped<E> {
    const stamped = stamp(event);
    const refusal = this.closed
      ? new IngestError({ code: 'client_closed', message: 'track() after close(); the event was not queued' })
      : this.pending >= this.maxQueue
        ? new IngestError({ code: 'queue_full', message: `${this.pending} events are waiting (maxQueueEvents); the event was not queued` })
        : null;
    if (refusal !== null) {
      if (this.opts.onFailed === undefined) throw refusal;
      this.settle({ ...emptyOutcome<E>(), failed: [{ events: [stamped], error: refusal }] });
      return stamped;
    }
    this.queue.push({ seq: ++this.seq, event: stamped });
    this.pump();
    return stamped;
  }

  /** Endpoint B: profiles to send with the next batch (later calls for the same user merge). */
  setProfile(...users: UserProfile[]): void {
    this.requireServer('setProfile');
    for (const u of users) {
      const id = String(u.messengerUserId);
      this.users.set(id, { ...this.users.get(id), ...u });
    }
  }

  /** Endpoint B: a bot snapshot to send with the next batch. */
  setBot(bot: BotSnapshot): void {
    this.requireServer('setBot');
    this.bot = { ...this.bot, ...bot };
  }

  /** Sends everything queued now; resolves once each of those events is settled, with what settled since the previous flush(). */
  flush(): Promise<FlushReport<E>> {
    const target = this.seq;
    this.dueSeq = target;
    const done = new Promise<FlushReport<E>>((resolve) => this.waiters.push({ seq: target, resolve }));
    this.pump();
    this.wake();
    return done;
  }

  /** Flushes, then refuses further events and stops the timer. */
  async close(): Promise<FlushReport<E>> {
    this.closed = true;
    const report = await this.flush();
    this.stopTimer();
    return report;
  }

  private pump(): void {
    while (this.inFlight.size < this.maxConcurrent && this.queue.length > 0 && (this.queue.length >= this.maxBatch || this.queue[0]!.seq <= this.dueSeq)) {
      const batch = this.queue.splice(0, this.maxBatch);
      void this.run(batch);
    }
    if (this.queue.length === 0) this.stopTimer();
    else if (this.timer === null && this.queue[0]!.seq > this.dueSeq) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.dueSeq = this.seq;
        this.pump();
      }, this.flushIntervalMs);
    }
  }

  private async run(queued: Queued<E>[]): Promise<void> {
    const batch: Batch = { firstSeq: queued[0]!.seq, size: queued.length };
    this.inFlight.add(batch);
    this.inFlightEvents += batch.size;
    const events = queued.map((q) => q.event);
    let outcome: Outcome<E>;
    try {
      outcome = await this.deliverWithExtras(events);
    } catch (cause) {
      // A bug or a throwing fetch replacement: the events are still reported, never lost.
      outcome = { ...emptyOutcome<E>(), failed: [{ events, error: new IngestError({ code: 'client_error', message: String(cause), cause }) }] };
    }
    this.inFlight.delete(batch);
    this.inFlightEvents -= batch.size;
    this.settle(outcome);
    this.pump();
    this.wake();
  }

  /** Profiles and the bot snapshot ride along with a batch; if no request of it got through they wait for the next. */
  private async deliverWithExtras(events: Stamped<E>[]): Promise<Outcome<E>> {
    const users = [...this.users.values()].slice(0, MAX_USERS_PER_REQUEST);
    for (const u of users) this.users.delete(String(u.messengerUserId));
    const bot = this.bot;
    this.bot = null;
    let delivered = false;
    const outcome = await deliver(events, async (evs) => {
      const r = await send(this.transport, () => this.body(evs, users, bot));
      delivered ||= r.ok;
      return r;
    });
    if (!delivered) {
      // Newer values set meanwhile win.
      for (const u of users) {
        const id = String(u.messengerUserId);
        this.users.set(id, { ...u, ...this.users.get(id) });
      }
      if (bot !== null) this.bot = { ...bot, ...(this.bot as BotSnapshot | null) };
    }
    return outcome;
  }

  private body(events: Stamped<E>[], users: UserProfile[], bot: BotSnapshot | null): unknown {
    if (this.mode === 'webapp') {
      const o = this.opts as WebAppClientOptions;
      return { botId: o.botId, auth: { initData: typeof o.initData === 'function' ? o.initData() : o.initData }, events };
    }
    return { events, ...(users.length > 0 ? { users } : {}), ...(bot !== null ? { bot } : {}) };
  }

  private settle(o: Outcome<E>): void {
    const r = this.report;
    r.accepted += o.accepted;
    r.duplicated += o.duplicated;
    r.storedNotBilled += o.storedNotBilled;
    r.requests += o.requests;
    r.retries += o.retries;
    r.warnings += o.warnings.diagnostics.length;
    r.rejected += o.rejected.length;
    for (const f of o.failed) r.failed += f.events.length;

    if (o.rejected.length > 0) {
      const events = o.rejected.map((x) => x.event);
      const diagnostics = o.rejected.flatMap((x) => x.diagnostics);
      if (!this.call(this.opts.onRejected as ((e: Stamped<E>[], d: Diagnostic[]) => void) | undefined, events, diagnostics)) this.keep(r.rejectedEvents, o.rejected, o.rejected.length);
    }
    for (const f of o.failed) {
      if (!this.call(this.opts.onFailed as ((e: Stamped<E>[], err: Error) => void) | undefined, f.events, f.error)) this.keep(r.failedEvents, [f], f.events.length);
    }
    if (o.warnings.diagnostics.length > 0) this.call(this.opts.onWarnings as ((e: Stamped<E>[], d: Diagnostic[]) => void) | undefined, o.warnings.events, o.warnings.diagnostics);
  }

  /** False when there is no callback or it threw: the caller then keeps the events for flush(). */
  private call<A>(cb: ((events: Stamped<E>[], arg: A) => void) | undefined, events: Stamped<E>[], arg: A): boolean {
    if (cb === undefined) return false;
    try {
      cb(events, arg);
      return true;
    } catch {
      return false;
    }
  }

  /** Kept entries are bounded like the queue; past the bound only the count survives. */
  private keep<T>(into: T[], items: T[], events: number): void {
    const r = this.report;
    const kept = r.rejectedEvents.length + r.failedEvents.reduce((n, f) => n + f.events.length, 0);
    if (kept + events <= this.maxQueue) into.push(...items);
    else r.unkeptEvents += events;
  }

  /** Resolves the flush() calls whose events have all settled. */
  private wake(): void {
    if (this.waiters.length === 0) return;
    let oldest = this.queue.length > 0 ? this.queue[0]!.seq : Infinity;
    for (const b of this.inFlight) oldest = Math.min(oldest, b.firstSeq);
    const ready = this.waiters.filter((w) => w.seq < oldest);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.seq >= oldest);
    const report = this.report;
    this.report = emptyReport();
    for (const w of ready) w.resolve(report);
  }

  private stopTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private requireServer(method: string): void {
    if (this.mode !== 'server') throw new TypeError(`${method}() is for endpoint B (apiKey); endpoint A takes the profile from initData`);
  }
}

function stamp<E extends object>(event: E): Stamped<E> {
  const e = event as { eventId?: unknown; eventDate?: unknown };
  const eventId = typeof e.eventId === 'string' && e.eventId !== '' ? e.eventId : globalThis.crypto.randomUUID();
  const eventDate = e.eventDate instanceof Date ? e.eventDate.toISOString() : typeof e.eventDate === 'string' ? e.eventDate : new Date().toISOString();
  // A copy, so a caller mutating its object cannot change what a retry resends.
  return { ...event, eventId, eventDate } as Stamped<E>;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Math.floor(n)));
}

function emptyReport<E>(): FlushReport<E> {
  return { accepted: 0, rejected: 0, failed: 0, duplicated: 0, storedNotBilled: 0, warnings: 0, requests: 0, retries: 0, rejectedEvents: [], failedEvents: [], unkeptEvents: 0 };
}

function emptyOutcome<E>(): Outcome<E> {
  return { accepted: 0, duplicated: 0, storedNotBilled: 0, requests: 0, retries: 0, rejected: [], failed: [], warnings: { events: [], diagnostics: [] } };
}

export function createClient(opts: ServerClientOptions): IngestClient<ServerEventInput>;
export function createClient(opts: WebAppClientOptions): IngestClient<WebAppEventInput>;
export function createClient(opts: ClientOptions): IngestClient<ServerEventInput> | IngestClient<WebAppEventInput> {
  return new IngestClient(opts);
}
