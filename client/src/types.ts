// Public types of the client: events per endpoint, options, and what it reports back.

/** The nine categories; anything else is stored as `platform` with a warning. */
export type EventType =
  | 'message'
  | 'interaction'
  | 'payment'
  | 'membership'
  | 'business'
  | 'poll'
  | 'reaction'
  | 'boost'
  | 'platform';

interface EventFields {
  /** UUID used for deduplication; filled with a UUIDv7 (time-ordered) when omitted. */
  eventId?: string;
  eventName: string;
  /** ISO 8601 date-time (or a Date); filled with the time of `track()` when omitted. */
  eventDate?: string | Date;
  eventType: EventType | (string & {});
  text?: string;
  propsString?: Record<string, string>;
  propsLong?: Record<string, number>;
  propsBool?: Record<string, boolean>;
}

/** An event for the bot_api endpoint (`POST /tg`, from a bot's backend). */
export interface BotApiEventInput extends EventFields {
  /** The messenger user id as a digit string (not your internal id). */
  platformUserId: string;
  eventOrigin: 'platform' | 'custom';
  propsFloat?: Record<string, number>;
}

/** @deprecated The former name of {@link BotApiEventInput}. */
export type ServerEventInput = BotApiEventInput;

/** An event for the webapp endpoint (`POST /tg/webapp`, from mini-app code): the user comes from initData. */
export type WebAppEventInput = EventFields;

/** An event as sent: id and date always present, so every retry carries the same ones. */
export type Stamped<E> = Omit<E, 'eventId' | 'eventDate'> & { eventId: string; eventDate: string };

/** A `users[]` item of the bot_api endpoint. */
export interface UserProfile {
  messengerUserId: number | string;
  username?: string;
  firstName?: string;
  lastName?: string;
  languageCode?: string;
  isPremium?: boolean;
}

/** The `bot` snapshot of the bot_api endpoint. */
export interface BotSnapshot {
  messengerBotId?: number | string;
  name?: string;
  description?: string;
  starsAmount?: number;
}

export interface Diagnostic {
  event_id: string | null;
  code: string;
  severity: 'error' | 'warning';
  path: string;
  message: string;
}

/** The body of a 202 (and of the 400 that means "every event rejected"). */
export interface IngestResponse {
  accepted: number;
  rejected: number;
  not_consumed_duplicated: number;
  stored_not_billed: number;
  diagnostics_truncated: boolean;
  diagnostics: Diagnostic[];
}

export interface RejectedEvent<E> {
  event: Stamped<E>;
  /** The event's error and warning diagnostics; empty when the server's list was cut at 100. */
  diagnostics: Diagnostic[];
}

export interface FailedEvents<E> {
  events: Stamped<E>[];
  error: Error;
}

interface CommonOptions<E> {
  /** Service address, e.g. `https://ingest.example.com` (no trailing path). */
  baseUrl: string;
  /** Events per request; at most (and by default) 1000. */
  maxBatchEvents?: number;
  /** A queued event waits at most this long before its batch is sent. Default 1000. */
  flushIntervalMs?: number;
  /** Queued plus in-flight events; beyond it `track` reports (or throws) `queue_full`. Default 100000. */
  maxQueueEvents?: number;
  /**
   * What a full queue does with a new event: `refuse` it (`queue_full`, the default), or `drop-oldest`: the event
   * that has waited longest in the queue is reported failed (`queue_dropped`) and the new one is queued. Events in
   * flight are never dropped; when every event is in flight the new one is refused.
   */
  whenFull?: 'refuse' | 'drop-oldest';
  /**
   * Node.js: false lets the process exit while the client waits (its flush and retry timers are unref'd), for a
   * host that must never be kept alive by analytics; it then calls close() before exit if it wants the queue sent.
   * Default true.
   */
  keepProcessAlive?: boolean;
  /** Requests in flight at once. Default 2. */
  maxConcurrentRequests?: number;
  /** Retries after the first attempt of a request. Default 8. */
  maxRetries?: number;
  /**
   * Exponential backoff with full jitter: random(0, min(retryMaxMs, retryBaseMs·2^n)); after a Retry-After of r,
   * r + random(0, min(r, retryMaxMs)), r honoured up to max(retryMaxMs, 10 minutes), which a request's waits add up to
   * at most. Defaults 250 and 30000.
   */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** A request that has not answered after this long is abandoned and retried. Default 30000. */
  requestTimeoutMs?: number;
  /** Bodies larger than this (bytes of JSON) are gzipped when `CompressionStream` exists. Default 16384. */
  gzipMinBytes?: number;
  /** Replaces the global fetch (a proxy, instrumentation). */
  fetch?: typeof fetch;
  /** Events the server rejected (diagnostics of severity `error`), with their diagnostics. */
  onRejected?: (events: Stamped<E>[], diagnostics: Diagnostic[]) => void;
  /**
   * Events whose delivery failed: a status that must not be retried, retries exhausted, or a full queue.
   * With `persist` (webapp endpoint), those that may still pass later (no answer, 408/429/5xx after
   * the retries, expired initData) also stay stored and are sent again by the next client.
   */
  onFailed?: (events: Stamped<E>[], error: Error) => void;
  /** Warnings (the events were repaired and stored); `events` are those the warnings name. */
  onWarnings?: (events: Stamped<E>[], diagnostics: Diagnostic[]) => void;
}

/** The bot_api endpoint: a bot's backend with its per-bot token. Never put the token in client code. */
export interface BotApiClientOptions extends CommonOptions<BotApiEventInput> {
  apiKey: string;
}

/** @deprecated The former name of {@link BotApiClientOptions}. */
export type ServerClientOptions = BotApiClientOptions;

/**
 * Where the webapp client keeps unsettled events: `localStorage` by default, any object with these three methods
 * otherwise.
 */
export interface OutboxStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The webapp endpoint: mini-app code, authenticated by the signed initData of the current session. */
export interface WebAppClientOptions extends CommonOptions<WebAppEventInput> {
  /** The service's bot id (UUID). */
  botId: string;
  /** initData as the mini-app SDK gives it; a function is called for every request, so it may refresh. */
  initData: string | (() => string);
  /**
   * Keeps every tracked event in `storage` (key `tg-ingest:outbox:<botId>`) until an answer settles
   * it: a 202 that covers it, or a rejection. The next client for this bot and user (the next session,
   * with its own initData) sends what is left first, with the same `eventId`s, so nothing is stored
   * twice. Failures that may pass later stay stored; final ones are dropped once reported. At most
   * `maxQueueEvents` events are kept. When the page is hidden or closed, the unsettled events are
   * also handed to `navigator.sendBeacon` (with or without `persist`). Default: true when
   * `localStorage` is usable. Storage is best effort: a write the browser refuses (quota, private
   * mode) leaves the events in memory only.
   */
  persist?: boolean;
  /** Replaces `localStorage` for `persist` (a test double, `sessionStorage`, a wrapper). */
  storage?: OutboxStorage;
}

export type ClientOptions = BotApiClientOptions | WebAppClientOptions;

/** What settled since the previous `flush()` resolved. */
export interface FlushReport<E> {
  /** Events stored, or recognised as stored before (a redelivery). */
  accepted: number;
  rejected: number;
  failed: number;
  /** Events dropped as a repeat of an earlier `eventId` in the same request. */
  duplicated: number;
  storedNotBilled: number;
  warnings: number;
  requests: number;
  retries: number;
  /** Rejections, kept here only when no `onRejected` is set (or it threw). */
  rejectedEvents: RejectedEvent<E>[];
  /** Failures, kept here only when no `onFailed` is set (or it threw). */
  failedEvents: FailedEvents<E>[];
  /**
   * Events whose rejection or failure was counted but not kept, as more than `maxQueueEvents` were waiting for
   * `flush()`.
   */
  unkeptEvents: number;
}
