// What the framework middlewares share: every update becomes its events (mapping.ts) with ids derived from the
// update, queued in a bounded client that never blocks, never throws into the bot and never keeps it alive.
import { type BotApiClient, createClient } from '../bot-api.js';
import { IngestError } from '../errors.js';
import type { BotApiEventInput, EventType, Stamped } from '../types.js';
import { updateEventId, updateNamespace } from './ids.js';
import { type MappedEvent, type MessengerUser, mapUpdate, type Update } from './mapping.js';

export interface BotTrackerOptions {
  /** The service, e.g. `https://ingest.example.com`. */
  baseUrl: string;
  /** A token of the bot (`X-API-Key`). */
  apiKey: string;
  /** Sends message text, captions and inline queries. Default false: only their length and kind. */
  captureText?: boolean;
  /** Events waiting to be sent; past it the oldest are dropped (and counted). Default 10000. */
  maxQueuedEvents?: number;
  /** Where delivery problems go. Default: a log line, at most one a minute. Never thrown into the bot. */
  onError?: (error: Error) => void;
  /** A user's profile is sent at most this often. Default 3600000 (an hour). */
  profileIntervalMs?: number;
  /** At exit, how long the last events may take to leave. Default 5000. */
  shutdownTimeoutMs?: number;
  /** A queued event waits at most this long before its batch leaves. Default 1000. */
  flushIntervalMs?: number;
  /** Retries of one request before its events go back to the queue. Default 4. */
  maxRetries?: number;
  /** Replaces the global fetch. */
  fetch?: typeof fetch;
  /**
   * The secret event ids are derived from (default: `apiKey`). Set it to keep ids stable across a token rotation: an
   * update redelivered after the bot moved to a new token is then still recognised.
   */
  eventIdSecret?: string;
}

/** The bot itself, as `getMe` describes it (grammY's `ctx.me`, Telegraf's `ctx.botInfo`). */
export interface BotInfo {
  id: number;
  first_name?: string;
  username?: string;
}

/** Properties of a custom event: strings, booleans, integers (`propsLong`) and other numbers (`propsFloat`). */
export type TrackProps = Record<string, string | number | boolean>;

export interface TrackOptions {
  /** Default `interaction`. */
  eventType?: EventType;
}

/** What `ctx.track` does: a custom event of the update's user, with an id derived from the update. */
export type Track = (eventName: string, props?: TrackProps, options?: TrackOptions) => void;

export interface TrackerStats {
  updates: number;
  events: number;
  /** Dropped from a full queue, oldest first. */
  dropped: number;
  /** Refused by the service (diagnostics of severity error). */
  rejected: number;
  /** Given up on: a final refusal of the request, or left when the process exited. */
  failed: number;
}

const MAX_REMEMBERED_USERS = 100_000;
const LOG_EVERY_MS = 60_000;

export class BotTracker {
  readonly stats: TrackerStats = { updates: 0, events: 0, dropped: 0, rejected: 0, failed: 0 };
  private readonly client: BotApiClient;
  private readonly captureText: boolean;
  private readonly profileIntervalMs: number;
  private readonly shutdownTimeoutMs: number;
  private readonly report: (error: Error) => void;
  /** User id → when their profile was last queued; insertion order is age, so the oldest go first. */
  private readonly profiled = new Map<number, number>();
  private readonly namespace: string;
  private botSent = false;
  private closing = false;
  /** Past close()'s deadline: what settles later was already counted as failed. */
  private abandoned = false;
  private readonly onExit = () => void this.close();

  constructor(opts: BotTrackerOptions) {
    this.captureText = opts.captureText === true;
    this.namespace = updateNamespace(opts.eventIdSecret ?? opts.apiKey);
    this.profileIntervalMs = opts.profileIntervalMs ?? 3_600_000;
    this.shutdownTimeoutMs = opts.shutdownTimeoutMs ?? 5000;
    this.report = guard(opts.onError ?? rateLimitedLog());
    this.client = createClient({
      baseUrl: opts.baseUrl,
      apiKey: opts.apiKey,
      maxQueueEvents: Math.max(1, opts.maxQueuedEvents ?? 10_000),
      whenFull: 'drop-oldest',
      keepProcessAlive: false,
      maxRetries: opts.maxRetries ?? 4,
      ...(opts.flushIntervalMs === undefined ? {} : { flushIntervalMs: opts.flushIntervalMs }),
      ...(opts.fetch === undefined ? {} : { fetch: opts.fetch }),
      onFailed: (events, error) => this.failed(events, error),
      onRejected: (events, diagnostics) => {
        this.stats.rejected += events.length;
        const first = diagnostics.find((d) => d.severity === 'error');
        this.report(
          new Error(`tg-ingest refused ${events.length} event(s): ${first ? `${first.code}: ${first.message}` : '?'}`),
        );
      },
    });
    // The process is about to exit (a bot stopped, nothing else to do): send what is queued, within a bound.
    nodeProcess()?.on('beforeExit', this.onExit);
  }

  /** Events queued or in flight. */
  get pending(): number {
    return this.client.pending;
  }

  /** Queues the update's events and returns the `track` of its user. Never throws. */
  observe(update: Update, bot: BotInfo): Track {
    let mapped: MappedEvent[] = [];
    try {
      this.stats.updates++;
      mapped = mapUpdate(update, { captureText: this.captureText });
      for (let i = 0; i < mapped.length; i++) this.queue(mapped[i]!, bot, update.update_id, i);
      if (!this.botSent && isId(bot.id)) {
        this.client.setBot({ messengerBotId: bot.id, ...(bot.first_name ? { name: bot.first_name } : {}) });
        this.botSent = true;
      }
    } catch (error) {
      this.report(error instanceof Error ? error : new Error(String(error)));
    }
    const user = mapped.find((e) => e.user !== null)?.user ?? null;
    let index = mapped.length;
    return (eventName, props, options) => {
      try {
        const event: MappedEvent = {
          eventName,
          eventType: options?.eventType ?? 'interaction',
          user,
          date: null,
          propsString: {},
          propsLong: {},
          propsBool: {},
        };
        this.queue(event, bot, update.update_id, index++, splitProps(props ?? {}), 'custom', eventName);
      } catch (error) {
        this.report(error instanceof Error ? error : new Error(String(error)));
      }
    };
  }

  /** Sends what is queued and waits until it is settled (stored, refused, or back in the queue after a failure). */
  async flush(): Promise<void> {
    await this.client.flush();
  }

  /** Sends what is queued, waiting at most `shutdownTimeoutMs`; later events are refused. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    nodeProcess()?.off('beforeExit', this.onExit);
    // This timer, unlike the client's, holds the process open: the last batch gets its chance.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.shutdownTimeoutMs);
    });
    await Promise.race([this.client.close(), deadline]);
    clearTimeout(timer);
    const left = this.client.pending;
    this.abandoned = true;
    if (left > 0) {
      this.stats.failed += left;
      this.report(
        new Error(`tg-ingest: ${left} event(s) were not delivered within ${this.shutdownTimeoutMs} ms of exit`),
      );
    }
  }

  private queue(
    e: MappedEvent,
    bot: BotInfo,
    updateId: number,
    index: number,
    custom?: Pick<BotApiEventInput, 'propsString' | 'propsLong' | 'propsBool' | 'propsFloat'>,
    origin: 'platform' | 'custom' = 'platform',
    customName?: string,
  ): void {
    const userId = e.user?.id ?? bot.id;
    this.stats.events++;
    if (e.user !== null) this.profile(e.user);
    this.client.track({
      eventId: updateEventId(this.namespace, bot.id, updateId, index, customName),
      eventName: e.eventName,
      eventType: e.eventType,
      eventOrigin: origin,
      eventDate: e.date === null ? new Date() : new Date(e.date * 1000),
      platformUserId: String(userId),
      ...(e.text === undefined ? {} : { text: e.text }),
      ...nonEmpty('propsString', custom?.propsString ?? e.propsString),
      ...nonEmpty('propsLong', custom?.propsLong ?? e.propsLong),
      ...nonEmpty('propsBool', custom?.propsBool ?? e.propsBool),
      ...nonEmpty('propsFloat', custom?.propsFloat ?? {}),
    });
  }

  /** The profile of a user rides with the next batch, at most once per `profileIntervalMs`. */
  private profile(u: MessengerUser): void {
    const now = Date.now();
    const last = this.profiled.get(u.id);
    if (last !== undefined && now - last < this.profileIntervalMs) return;
    this.profiled.delete(u.id);
    this.profiled.set(u.id, now);
    if (this.profiled.size > MAX_REMEMBERED_USERS) this.profiled.delete(this.profiled.keys().next().value!);
    this.client.setProfile({
      messengerUserId: u.id,
      ...(u.username === undefined ? {} : { username: u.username }),
      ...(u.first_name === undefined ? {} : { firstName: u.first_name }),
      ...(u.is_premium === undefined ? {} : { isPremium: u.is_premium }),
      ...(u.language_code === undefined ? {} : { languageCode: u.language_code }),
    });
  }

  /**
   * Failures that may pass later (no answer, 429, 5xx after the retries) go back to the queue with their ids, so an
   * outage loses nothing the queue can hold; the rest are given up and reported.
   */
  private failed(events: Stamped<BotApiEventInput>[], error: Error): void {
    if (this.abandoned) return;
    const code = error instanceof IngestError ? error.code : '';
    if (code === 'queue_dropped') {
      this.stats.dropped += events.length;
      this.report(error);
      return;
    }
    if (!this.closing && mayPassLater(error)) {
      for (const e of events) this.client.track(e);
      this.report(error);
      return;
    }
    this.stats.failed += events.length;
    this.report(error);
  }
}

function mayPassLater(error: Error): boolean {
  if (!(error instanceof IngestError)) return false;
  return error.code === 'network_error' || error.code === 'timeout' || error.retriesExhausted === true;
}

function splitProps(
  props: TrackProps,
): Required<Pick<BotApiEventInput, 'propsString' | 'propsLong' | 'propsBool' | 'propsFloat'>> {
  const out = { propsString: {}, propsLong: {}, propsBool: {}, propsFloat: {} } as Required<
    Pick<BotApiEventInput, 'propsString' | 'propsLong' | 'propsBool' | 'propsFloat'>
  >;
  for (const [k, v] of Object.entries(props)) {
    if (typeof v === 'string') out.propsString[k] = v;
    else if (typeof v === 'boolean') out.propsBool[k] = v;
    else if (Number.isSafeInteger(v)) out.propsLong[k] = v;
    else if (Number.isFinite(v)) out.propsFloat[k] = v;
  }
  return out;
}

function nonEmpty<K extends string, V>(key: K, v: Record<string, V>): Partial<Record<K, Record<string, V>>> {
  for (const _ in v) return { [key]: v } as Record<K, Record<string, V>>;
  return {};
}

interface NodeProcess {
  on(event: 'beforeExit', listener: () => void): void;
  off(event: 'beforeExit', listener: () => void): void;
}

/** Node.js's process (Bun and Deno provide it too); undefined on edge runtimes, which have no exit to wait for. */
function nodeProcess(): NodeProcess | undefined {
  const p = (globalThis as { process?: Partial<NodeProcess> }).process;
  return typeof p?.on === 'function' && typeof p.off === 'function' ? (p as NodeProcess) : undefined;
}

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

/** A callback that throws must not reach the bot. */
function guard(f: (error: Error) => void): (error: Error) => void {
  return (error) => {
    try {
      f(error);
    } catch {
      // The bot's own onError failed: nothing more to do without risking the bot.
    }
  };
}

/** The default onError: one line a minute, saying how many were not shown. */
function rateLimitedLog(): (error: Error) => void {
  let last = 0;
  let unshown = 0;
  return (error) => {
    const now = Date.now();
    if (now - last < LOG_EVERY_MS) {
      unshown++;
      return;
    }
    last = now;
    const more = unshown > 0 ? ` (${unshown} more since the last line)` : '';
    unshown = 0;
    console.warn(`[tg-ingest] ${error.message}${more}`);
  };
}

/** What both framework middlewares are: the function, its tracker, and flush/close. */
export type UpdateMiddleware<C> = ((ctx: C, next: () => Promise<void>) => Promise<void>) & {
  readonly tracker: BotTracker;
  /** Sends what is queued and waits for it. */
  flush(): Promise<void>;
  /** Sends what is queued (at most `shutdownTimeoutMs`), then stops. Also done by itself when the process exits. */
  close(): Promise<void>;
};

/**
 * The middleware a framework package exports: maps each update, sets `ctx.track`, and calls `next()` at once.
 * `read` says where the framework keeps the update and the bot's own description.
 */
export function updateMiddleware<C>(
  options: BotTrackerOptions,
  read: (ctx: C) => { update: Update; bot: BotInfo },
): UpdateMiddleware<C> {
  const tracker = new BotTracker(options);
  const middleware = (ctx: C, next: () => Promise<void>) => {
    const { update, bot } = read(ctx);
    (ctx as C & { track: Track }).track = tracker.observe(update, bot);
    return next();
  };
  return Object.assign(middleware, {
    tracker,
    flush: () => tracker.flush(),
    close: () => tracker.close(),
  });
}
