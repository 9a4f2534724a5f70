// Queue, batching and reporting. Events wait in a FIFO; a batch leaves when it is full, when the
// oldest queued event has waited flushIntervalMs, or on flush()/close(). Every event ends up in
// exactly one of: accepted, rejected, failed, and each of the last two reaches a callback or the
// next flush() report. On the webapp endpoint the outbox also holds every unsettled event, in
// storage for the next session and for the beacons sent when the page is hidden or closed.
import { beaconBodies, webappHead } from './beacon.js';
import { type BeaconSender, beaconSender, browserStorage, watchPageHide } from './browser.js';
import { addCounts, deliver, emptyOutcome, type Outcome } from './deliver.js';
import { IngestError } from './errors.js';
import { Fifo } from './fifo.js';
import { idKey, initDataUser, mayPassLater, Outbox, outboxKey } from './outbox.js';
import { unref } from './retry.js';
import { type SendResult, send, type TransportConfig } from './transport.js';
import type { BotApiClientOptions, ClientOptions, FlushReport, Stamped, WebAppClientOptions } from './types.js';

export const MAX_BATCH_EVENTS = 1000;
/** maxQueueEvents unless given: events queued, and (BotApiClient) profiles waiting. */
export const DEFAULT_MAX_QUEUE = 100_000;

interface Queued<E> {
  seq: number;
  event: Stamped<E>;
}

interface Batch {
  firstSeq: number;
  size: number;
}

/**
 * The webapp endpoint's client, and the queue BotApiClient builds on. Members are `#private`: the mini-app SDK's
 * script carries this class, and a minifier may shorten private names but no others.
 */
export class IngestClient<E extends object> {
  readonly #transport: TransportConfig;
  readonly #maxBatch: number;
  readonly #flushIntervalMs: number;
  readonly #maxQueue: number;
  readonly #maxConcurrent: number;
  readonly #dropOldest: boolean;
  readonly #opts: ClientOptions;

  readonly #queue = new Fifo<Queued<E>>();
  /** Dropped from a full queue, waiting to be reported. */
  #dropped: Stamped<E>[] = [];
  readonly #inFlight = new Set<Batch>();
  #inFlightEvents = 0;
  #seq = 0;
  /** Events up to this seq are due now (timer fired or flush() asked). */
  #dueSeq = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #closed = false;
  #waiters: { seq: number; resolve: (r: FlushReport<E>) => void }[] = [];
  #report: FlushReport<E> = emptyReport();
  /** webapp only. */
  readonly #outbox: Outbox<E> | null = null;
  readonly #unwatchPage: (() => void) | null = null;
  /** The initData user, once known: a session does not change users. */
  #knownUser: string | null = null;

  constructor(opts: ClientOptions) {
    const webapp = !('apiKey' in opts);
    // Without profiles or the split of a request bot_api refuses for one event, it would be a lesser bot_api client.
    if (!webapp && new.target === IngestClient) throw new TypeError('with apiKey, use createClient() or BotApiClient');
    this.#opts = opts;
    this.#maxBatch = clamp(opts.maxBatchEvents ?? MAX_BATCH_EVENTS, 1, MAX_BATCH_EVENTS);
    this.#flushIntervalMs = Math.max(0, opts.flushIntervalMs ?? 1000);
    this.#maxQueue = Math.max(1, opts.maxQueueEvents ?? DEFAULT_MAX_QUEUE);
    this.#maxConcurrent = Math.max(1, opts.maxConcurrentRequests ?? 2);
    this.#dropOldest = opts.whenFull === 'drop-oldest';
    const base = opts.baseUrl.replace(/\/+$/, '');
    this.#transport = {
      endpoint: webapp ? 'webapp' : 'bot_api',
      url: webapp ? `${base}/tg/webapp` : `${base}/tg`,
      // text/plain on webapp spares a browser the CORS preflight (gzip bodies need one anyway).
      headers: webapp
        ? { 'Content-Type': 'text/plain;charset=UTF-8' }
        : { 'Content-Type': 'application/json', 'X-API-Key': (opts as BotApiClientOptions).apiKey },
      fetch: opts.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
      gzipMinBytes: opts.gzipMinBytes ?? 16 * 1024,
      maxRetries: Math.max(0, opts.maxRetries ?? 8),
      retryBaseMs: opts.retryBaseMs ?? 250,
      retryMaxMs: opts.retryMaxMs ?? 30_000,
      keepAlive: opts.keepProcessAlive !== false,
    };
    if (webapp) {
      const storage = opts.persist === false ? null : (opts.storage ?? browserStorage());
      this.#outbox = new Outbox<E>(storage, outboxKey(opts.botId), () => this.#user());
      const beacon = beaconSender();
      if (beacon !== null) this.#unwatchPage = watchPageHide(() => this.#pageHidden(beacon));
      this.#restore();
    }
  }

  /** Events queued or in flight. */
  get pending(): number {
    return this.#queue.length + this.#inFlightEvents;
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
    if (
      encodable === null &&
      this.#dropOldest &&
      !this.#closed &&
      this.pending >= this.#maxQueue &&
      this.#queue.length > 0
    )
      this.#dropHead();
    const refusal = this.#closed
      ? new IngestError({ code: 'client_closed', message: 'track() after close()' })
      : this.pending >= this.#maxQueue
        ? new IngestError({ code: 'queue_full', message: `${this.pending} events waiting (maxQueueEvents)` })
        : encodable;
    if (refusal !== null) {
      if (this.#opts.onFailed === undefined) throw refusal;
      this.#settle({ ...emptyOutcome<E>(), failed: [{ events: [stamped], error: refusal }] });
      return stamped;
    }
    if (this.#outbox !== null) {
      this.#outbox.makeRoom(this.#maxQueue - 1);
      this.#outbox.add(stamped);
    }
    this.#queue.push({ seq: ++this.#seq, event: stamped });
    this.#pump();
    return stamped;
  }

  /**
   * Makes room for one event: the longest-waiting queued event is reported failed, as `queue_dropped`. Reported
   * together once the caller's code has run (a microtask later), one error for all dropped meanwhile: a full
   * queue then costs the caller no error per event.
   */
  #dropHead(): void {
    const [dropped] = this.#queue.take(1);
    this.#outbox?.settle([dropped!.event]);
    this.#dropped.push(dropped!.event);
    if (this.#dropped.length > 1) return;
    queueMicrotask(() => {
      const events = this.#dropped;
      this.#dropped = [];
      const error = new IngestError({
        code: 'queue_dropped',
        message: `${events.length} oldest dropped for newer ones (maxQueueEvents ${this.#maxQueue})`,
      });
      this.#settle({ ...emptyOutcome<E>(), failed: [{ events, error }] });
      this.#wake();
    });
  }

  /**
   * Sends everything queued now; resolves once each of those events is settled, with what settled since the previous
   * flush().
   */
  flush(): Promise<FlushReport<E>> {
    const target = this.#seq;
    this.#dueSeq = target;
    const done = new Promise<FlushReport<E>>((resolve) => this.#waiters.push({ seq: target, resolve }));
    this.#pump();
    this.#wake();
    return done;
  }

  /** Flushes, then refuses further events and stops the timer (and, in a browser, watching the page). */
  async close(): Promise<FlushReport<E>> {
    this.#closed = true;
    const report = await this.flush();
    this.#stopTimer();
    this.#unwatchPage?.();
    this.#outbox?.save();
    return report;
  }

  /** One request of a batch; `extra` joins the bot_api body (profiles, the bot snapshot). For BotApiClient. */
  protected post(events: Stamped<E>[], extra?: object): Promise<SendResult> {
    return send(this.#transport, () =>
      this.#transport.endpoint === 'webapp'
        ? { botId: (this.#opts as WebAppClientOptions).botId, auth: { initData: this.#initData() }, events }
        : { events, ...extra },
    );
  }

  /**
   * A batch's delivery: BotApiClient lets its profiles and bot snapshot ride along. Called from the constructor when
   * stored events are restored, before a subclass's own fields exist: only bot_api overrides it, which restores none.
   */
  protected deliverBatch(events: Stamped<E>[]): Promise<Outcome<E>> {
    return deliver(events, (evs) => this.post(evs));
  }

  /** Stored events of an earlier session go first, and at once: they have waited long enough. */
  #restore(): void {
    const events = this.#outbox!.load(this.#maxQueue);
    if (events.length === 0) return;
    for (const event of events) this.#queue.push({ seq: ++this.#seq, event });
    this.#dueSeq = this.#seq;
    this.#pump();
  }

  /**
   * The page may never run again: hand what is unsettled to beacons. Their answers cannot be read,
   * so the events stay held and stored, and a redelivery later is recognised by the server.
   */
  #pageHidden(sendBeacon: BeaconSender): void {
    const outbox = this.#outbox!;
    outbox.save();
    let initData: string;
    try {
      initData = this.#initData();
    } catch {
      return;
    }
    const events = outbox.forBeacon(this.#queue.map((q) => q.event));
    const head = webappHead((this.#opts as WebAppClientOptions).botId, initData);
    for (const body of beaconBodies(head, events, (e) => JSON.stringify(e))) {
      if (!sendBeacon(this.#transport.url, body.json)) break;
      outbox.markBeaconed(body.items);
    }
  }

  #pump(): void {
    while (
      this.#inFlight.size < this.#maxConcurrent &&
      this.#queue.length > 0 &&
      (this.#queue.length >= this.#maxBatch || this.#queue.peek()!.seq <= this.#dueSeq)
    ) {
      void this.#run(this.#queue.take(this.#maxBatch));
    }
    if (this.#queue.length === 0) this.#stopTimer();
    else if (this.#timer === null && this.#queue.peek()!.seq > this.#dueSeq) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#dueSeq = this.#seq;
        this.#pump();
      }, this.#flushIntervalMs);
      if (!this.#transport.keepAlive) unref(this.#timer);
    }
  }

  async #run(queued: Queued<E>[]): Promise<void> {
    const batch: Batch = { firstSeq: queued[0]!.seq, size: queued.length };
    this.#inFlight.add(batch);
    this.#inFlightEvents += batch.size;
    const events = queued.map((q) => q.event);
    let outcome: Outcome<E>;
    try {
      outcome = await this.deliverBatch(events);
    } catch (cause) {
      // A bug or a throwing fetch replacement: the events are still reported, never lost.
      outcome = {
        ...emptyOutcome<E>(),
        failed: [{ events, error: new IngestError({ code: 'client_error', message: String(cause), cause }) }],
      };
    }
    this.#inFlight.delete(batch);
    this.#inFlightEvents -= batch.size;
    // Before the callbacks, which may track these events again.
    if (this.#outbox !== null) this.#release(events, outcome);
    this.#settle(outcome);
    this.#pump();
    this.#wake();
  }

  /** The outbox lets go of what an answer settled; failures that may pass later stay stored for the next session. */
  #release(events: Stamped<E>[], o: Outcome<E>): void {
    const outbox = this.#outbox!;
    const keep = new Set<string>();
    if (outbox.persists) {
      for (const f of o.failed) {
        if (mayPassLater(f.error)) for (const e of f.events) keep.add(idKey(e.eventId));
      }
    }
    outbox.settle(events.filter((e) => !keep.has(idKey(e.eventId))));
    outbox.keepFailed(events.filter((e) => keep.has(idKey(e.eventId))));
  }

  #initData(): string {
    const o = this.#opts as WebAppClientOptions;
    return typeof o.initData === 'function' ? o.initData() : o.initData;
  }

  /** The user stored events belong to; read from initData until it names one (the SDK may not be ready at first). */
  #user(): string | null {
    if (this.#knownUser === null) {
      try {
        this.#knownUser = initDataUser(this.#initData());
      } catch {
        // initData not available yet: ask again next time.
      }
    }
    return this.#knownUser;
  }

  #settle(o: Outcome<E>): void {
    const r = this.#report;
    addCounts(r, o);
    r.warnings += o.warnings.diagnostics.length;
    r.rejected += o.rejected.length;
    for (const f of o.failed) r.failed += f.events.length;

    if (o.rejected.length > 0) {
      const events = o.rejected.map((x) => x.event);
      const diagnostics = o.rejected.flatMap((x) => x.diagnostics);
      if (!this.#call(this.#opts.onRejected, events, diagnostics))
        this.#keep(r.rejectedEvents, o.rejected, o.rejected.length);
    }
    for (const f of o.failed) {
      if (!this.#call(this.#opts.onFailed, f.events, f.error)) this.#keep(r.failedEvents, [f], f.events.length);
    }
    if (o.warnings.diagnostics.length > 0) this.#call(this.#opts.onWarnings, o.warnings.events, o.warnings.diagnostics);
  }

  /** False when there is no callback or it threw: the caller then keeps the events for flush(). */
  #call<A>(cb: unknown, events: Stamped<E>[], arg: A): boolean {
    if (cb === undefined) return false;
    try {
      (cb as (events: Stamped<E>[], arg: A) => void)(events, arg);
      return true;
    } catch {
      return false;
    }
  }

  /** Kept entries are bounded like the queue; past the bound only the count survives. */
  #keep<T>(into: T[], items: T[], events: number): void {
    const r = this.#report;
    const kept = r.rejectedEvents.length + r.failedEvents.reduce((n, f) => n + f.events.length, 0);
    if (kept + events <= this.#maxQueue) into.push(...items);
    else r.unkeptEvents += events;
  }

  /** Resolves the flush() calls whose events have all settled. */
  #wake(): void {
    if (this.#waiters.length === 0) return;
    let oldest = this.#queue.length > 0 ? this.#queue.peek()!.seq : Infinity;
    for (const b of this.#inFlight) oldest = Math.min(oldest, b.firstSeq);
    const ready = this.#waiters.filter((w) => w.seq < oldest);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => w.seq >= oldest);
    const report = this.#report;
    this.#report = emptyReport();
    for (const w of ready) w.resolve(report);
  }

  #stopTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
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
      message: `not encodable as JSON: ${String(cause)}`,
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
