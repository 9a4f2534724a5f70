// Queue, batching and reporting. Events wait in a FIFO; a batch leaves when it is full, when the
// oldest queued event has waited flushIntervalMs, or on flush()/close(). Every event ends up in
// exactly one of: accepted, rejected, failed, and each of the last two reaches a callback or the
// next flush() report. On the webapp endpoint the outbox also holds every unsettled event, in
// storage for the next session and for the beacons sent when the page is hidden or closed.
import { beaconBodies, webappHead } from './beacon.js';
import { type BeaconSender, beaconSender, browserStorage, watchPageHide } from './browser.js';
import { deliver, type Outcome } from './deliver.js';
import { IngestError } from './errors.js';
import { Fifo } from './fifo.js';
import { idKey, initDataUser, mayPassLater, Outbox, outboxKey } from './outbox.js';
import { type Endpoint, unref } from './retry.js';
import { send, type TransportConfig } from './transport.js';
import type {
  BotApiClientOptions,
  BotApiEventInput,
  BotSnapshot,
  ClientOptions,
  Diagnostic,
  FlushReport,
  Stamped,
  UserProfile,
  WebAppClientOptions,
  WebAppEventInput,
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
  private readonly dropOldest: boolean;
  private readonly opts: ClientOptions;

  private readonly queue = new Fifo<Queued<E>>();
  /** Dropped from a full queue, waiting to be reported. */
  private dropped: Stamped<E>[] = [];
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
  /** webapp only. */
  private readonly outbox: Outbox<E> | null = null;
  private readonly unwatchPage: (() => void) | null = null;
  /** The initData user, once known: a session does not change users. */
  private knownUser: string | null = null;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.mode = 'apiKey' in opts ? 'bot_api' : 'webapp';
    this.maxBatch = clamp(opts.maxBatchEvents ?? MAX_BATCH_EVENTS, 1, MAX_BATCH_EVENTS);
    this.flushIntervalMs = Math.max(0, opts.flushIntervalMs ?? 1000);
    this.maxQueue = Math.max(1, opts.maxQueueEvents ?? 100_000);
    this.maxConcurrent = Math.max(1, opts.maxConcurrentRequests ?? 2);
    this.dropOldest = opts.whenFull === 'drop-oldest';
    const base = opts.baseUrl.replace(/\/+$/, '');
    const fetchImpl =
      opts.fetch ?? ((input: Parameters<typeof fetch>[0], init?: RequestInit) => globalThis.fetch(input, init));
    this.transport = {
      endpoint: this.mode,
      url: this.mode === 'bot_api' ? `${base}/tg` : `${base}/tg/webapp`,
      // text/plain on webapp spares a browser the CORS preflight (gzip bodies need one anyway).
      headers:
        this.mode === 'bot_api'
          ? { 'Content-Type': 'application/json', 'X-API-Key': (opts as BotApiClientOptions).apiKey }
          : { 'Content-Type': 'text/plain;charset=UTF-8' },
      fetch: fetchImpl,
      requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
      gzipMinBytes: opts.gzipMinBytes ?? 16 * 1024,
      maxRetries: Math.max(0, opts.maxRetries ?? 8),
      retryBaseMs: opts.retryBaseMs ?? 250,
      retryMaxMs: opts.retryMaxMs ?? 30_000,
      keepAlive: opts.keepProcessAlive !== false,
    };
    if (this.mode === 'webapp') {
      const o = opts as WebAppClientOptions;
      const storage = o.persist === false ? null : (o.storage ?? browserStorage());
      this.outbox = new Outbox<E>(storage, outboxKey(o.botId), () => this.user());
      const beacon = beaconSender();
      if (beacon !== null) this.unwatchPage = watchPageHide(() => this.pageHidden(beacon));
      this.restore();
    }
  }

  /** Events queued or in flight. */
  get pending(): number {
    return this.queue.length + this.inFlightEvents;
  }

  /**
   * Queues an event and returns it as it will be sent (with its eventId and eventDate). A closed
   * client, a full queue or an event JSON cannot encode reports the event to onFailed, or throws an
   * IngestError without one.
   */
  track(event: E): Stamped<E> {
    const stamped = stamp(event);
    const encodable = unserializable(stamped);
    // An event that cannot be sent never pushes out one that can.
    if (encodable === null && this.dropOldest && !this.closed && this.pending >= this.maxQueue && this.queue.length > 0)
      this.dropHead();
    const refusal = this.closed
      ? new IngestError({ code: 'client_closed', message: 'track() after close(); the event was not queued' })
      : this.pending >= this.maxQueue
        ? new IngestError({
            code: 'queue_full',
            message: `${this.pending} events are waiting (maxQueueEvents); the event was not queued`,
          })
        : encodable;
    if (refusal !== null) {
      if (this.opts.onFailed === undefined) throw refusal;
      this.settle({ ...emptyOutcome<E>(), failed: [{ events: [stamped], error: refusal }] });
      return stamped;
    }
    if (this.outbox !== null) {
      this.outbox.makeRoom(this.maxQueue - 1);
      this.outbox.add(stamped);
    }
    this.queue.push({ seq: ++this.seq, event: stamped });
    this.pump();
    return stamped;
  }

  /**
   * Makes room for one event: the longest-waiting queued event is reported failed, as `queue_dropped`. Reported
   * together once the caller's code has run (a microtask later), one error for all dropped meanwhile: a full
   * queue then costs the caller no error per event.
   */
  private dropHead(): void {
    const [dropped] = this.queue.take(1);
    this.outbox?.settle([dropped!.event]);
    this.dropped.push(dropped!.event);
    if (this.dropped.length > 1) return;
    queueMicrotask(() => {
      const events = this.dropped;
      this.dropped = [];
      const error = new IngestError({
        code: 'queue_dropped',
        message: `${this.maxQueue} events were waiting (maxQueueEvents); ${events.length} oldest queued dropped for newer ones`,
      });
      this.settle({ ...emptyOutcome<E>(), failed: [{ events, error }] });
      this.wake();
    });
  }

  /** bot_api endpoint: profiles to send with the next batch (later calls for the same user merge). */
  setProfile(...users: UserProfile[]): void {
    this.requireBotApi('setProfile');
    for (const u of users) {
      const id = String(u.messengerUserId);
      const merged = { ...this.users.get(id), ...u };
      this.users.delete(id);
      this.users.set(id, merged);
      // Bounded like the queue: while nothing can be sent, the profiles of the longest-unseen users go first.
      if (this.users.size > this.maxQueue) this.users.delete(this.users.keys().next().value!);
    }
  }

  /** bot_api endpoint: a bot snapshot to send with the next batch. */
  setBot(bot: BotSnapshot): void {
    this.requireBotApi('setBot');
    this.bot = { ...this.bot, ...bot };
  }

  /**
   * Sends everything queued now; resolves once each of those events is settled, with what settled since the previous
   * flush().
   */
  flush(): Promise<FlushReport<E>> {
    const target = this.seq;
    this.dueSeq = target;
    const done = new Promise<FlushReport<E>>((resolve) => this.waiters.push({ seq: target, resolve }));
    this.pump();
    this.wake();
    return done;
  }

  /** Flushes, then refuses further events and stops the timer (and, in a browser, watching the page). */
  async close(): Promise<FlushReport<E>> {
    this.closed = true;
    const report = await this.flush();
    this.stopTimer();
    this.unwatchPage?.();
    this.outbox?.save();
    return report;
  }

  /** Stored events of an earlier session go first, and at once: they have waited long enough. */
  private restore(): void {
    const events = this.outbox!.load(this.maxQueue);
    if (events.length === 0) return;
    for (const event of events) this.queue.push({ seq: ++this.seq, event });
    this.dueSeq = this.seq;
    this.pump();
  }

  /**
   * The page may never run again: hand what is unsettled to beacons. Their answers cannot be read,
   * so the events stay held and stored, and a redelivery later is recognised by the server.
   */
  private pageHidden(sendBeacon: BeaconSender): void {
    const outbox = this.outbox!;
    outbox.save();
    let initData: string;
    try {
      initData = this.initData();
    } catch {
      return;
    }
    const events = outbox.forBeacon(this.queue.map((q) => q.event));
    const head = webappHead((this.opts as WebAppClientOptions).botId, initData);
    for (const body of beaconBodies(head, events, (e) => JSON.stringify(e))) {
      if (!sendBeacon(this.transport.url, body.json)) break;
      outbox.markBeaconed(body.items);
    }
  }

  private pump(): void {
    while (
      this.inFlight.size < this.maxConcurrent &&
      this.queue.length > 0 &&
      (this.queue.length >= this.maxBatch || this.queue.peek()!.seq <= this.dueSeq)
    ) {
      const batch = this.queue.take(this.maxBatch);
      void this.run(batch);
    }
    if (this.queue.length === 0) this.stopTimer();
    else if (this.timer === null && this.queue.peek()!.seq > this.dueSeq) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.dueSeq = this.seq;
        this.pump();
      }, this.flushIntervalMs);
      if (!this.transport.keepAlive) unref(this.timer);
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
      outcome = {
        ...emptyOutcome<E>(),
        failed: [{ events, error: new IngestError({ code: 'client_error', message: String(cause), cause }) }],
      };
    }
    this.inFlight.delete(batch);
    this.inFlightEvents -= batch.size;
    // Before the callbacks, which may track these events again.
    if (this.outbox !== null) this.release(events, outcome);
    this.settle(outcome);
    this.pump();
    this.wake();
  }

  /** Profiles and the bot snapshot ride along with a batch; if no request of it got through they wait for the next. */
  private async deliverWithExtras(events: Stamped<E>[]): Promise<Outcome<E>> {
    const users: UserProfile[] = [];
    for (const u of this.users.values()) {
      if (users.length === MAX_USERS_PER_REQUEST) break;
      users.push(u);
    }
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

  /** The outbox lets go of what an answer settled; failures that may pass later stay stored for the next session. */
  private release(events: Stamped<E>[], o: Outcome<E>): void {
    const outbox = this.outbox!;
    const keep = new Set<string>();
    if (outbox.persists) {
      for (const f of o.failed) {
        if (mayPassLater(f.error)) for (const e of f.events) keep.add(idKey(e.eventId));
      }
    }
    outbox.settle(events.filter((e) => !keep.has(idKey(e.eventId))));
    outbox.keepFailed(events.filter((e) => keep.has(idKey(e.eventId))));
  }

  private initData(): string {
    const o = this.opts as WebAppClientOptions;
    return typeof o.initData === 'function' ? o.initData() : o.initData;
  }

  /** The user stored events belong to; read from initData until it names one (the SDK may not be ready at first). */
  private user(): string | null {
    if (this.knownUser === null) {
      try {
        this.knownUser = initDataUser(this.initData());
      } catch {
        // initData not available yet: ask again next time.
      }
    }
    return this.knownUser;
  }

  private body(events: Stamped<E>[], users: UserProfile[], bot: BotSnapshot | null): unknown {
    if (this.mode === 'webapp') {
      return { botId: (this.opts as WebAppClientOptions).botId, auth: { initData: this.initData() }, events };
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
      if (
        !this.call(
          this.opts.onRejected as ((e: Stamped<E>[], d: Diagnostic[]) => void) | undefined,
          events,
          diagnostics,
        )
      )
        this.keep(r.rejectedEvents, o.rejected, o.rejected.length);
    }
    for (const f of o.failed) {
      if (!this.call(this.opts.onFailed as ((e: Stamped<E>[], err: Error) => void) | undefined, f.events, f.error))
        this.keep(r.failedEvents, [f], f.events.length);
    }
    if (o.warnings.diagnostics.length > 0)
      this.call(
        this.opts.onWarnings as ((e: Stamped<E>[], d: Diagnostic[]) => void) | undefined,
        o.warnings.events,
        o.warnings.diagnostics,
      );
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
    let oldest = this.queue.length > 0 ? this.queue.peek()!.seq : Infinity;
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

  private requireBotApi(method: string): void {
    if (this.mode !== 'bot_api')
      throw new TypeError(
        `${method}() is for the bot_api endpoint (apiKey); the webapp endpoint takes the profile from initData`,
      );
  }
}

function stamp<E extends object>(event: E): Stamped<E> {
  const e = event as { eventId?: unknown; eventDate?: unknown };
  const eventId = typeof e.eventId === 'string' && e.eventId !== '' ? e.eventId : uuidv7();
  const eventDate =
    e.eventDate instanceof Date
      ? e.eventDate.toISOString()
      : typeof e.eventDate === 'string'
        ? e.eventDate
        : new Date().toISOString();
  // A copy, so a caller mutating its object cannot change what a retry resends.
  return { ...event, eventId, eventDate } as Stamped<E>;
}

/**
 * An event JSON cannot carry (a BigInt, a cycle) would fail its whole batch, and every write of the outbox: it is
 * refused alone.
 */
function unserializable(event: object): IngestError | null {
  try {
    JSON.stringify(event);
    return null;
  } catch (cause) {
    return new IngestError({
      code: 'event_unserializable',
      message: `the event cannot be encoded as JSON (${String(cause)}); it was not queued`,
      cause,
    });
  }
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. The service's unique index on
 * (project, eventId) then takes a project's new ids at its right edge, in pages that stay in memory,
 * instead of at a random page of an index that may be far larger than memory.
 */
export function uuidv7(now = Date.now()): string {
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16));
  const ms = Math.max(0, Math.floor(now));
  const high = Math.floor(ms / 2 ** 16);
  b[0] = (high >>> 24) & 0xff;
  b[1] = (high >>> 16) & 0xff;
  b[2] = (high >>> 8) & 0xff;
  b[3] = high & 0xff;
  b[4] = (ms >>> 8) & 0xff;
  b[5] = ms & 0xff;
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Math.floor(n)));
}

function emptyReport<E>(): FlushReport<E> {
  return {
    accepted: 0,
    rejected: 0,
    failed: 0,
    duplicated: 0,
    storedNotBilled: 0,
    warnings: 0,
    requests: 0,
    retries: 0,
    rejectedEvents: [],
    failedEvents: [],
    unkeptEvents: 0,
  };
}

function emptyOutcome<E>(): Outcome<E> {
  return {
    accepted: 0,
    duplicated: 0,
    storedNotBilled: 0,
    requests: 0,
    retries: 0,
    rejected: [],
    failed: [],
    warnings: { events: [], diagnostics: [] },
  };
}

export function createClient(opts: BotApiClientOptions): IngestClient<BotApiEventInput>;
export function createClient(opts: WebAppClientOptions): IngestClient<WebAppEventInput>;
export function createClient(opts: ClientOptions): IngestClient<BotApiEventInput> | IngestClient<WebAppEventInput> {
  return new IngestClient(opts);
}
