// grammY middleware: every update the bot receives becomes canonical events in tg-ingest (the table is shared with
// @tg-ingest/telegraf, in @tg-ingest/client/updates), and `ctx.track()` adds the bot's own events.
import {
  BotTracker,
  type BotTrackerOptions,
  type Track,
  type TrackerStats,
  type TrackOptions,
  type TrackProps,
} from '@tg-ingest/client/updates';
import type { Context, MiddlewareFn } from 'grammy';

export type { Track, TrackerStats, TrackOptions, TrackProps };
export type TgIngestOptions = BotTrackerOptions;

/** Add to the bot's context type (`Bot<Context & TgIngestFlavor>`) to type `ctx.track`. */
export interface TgIngestFlavor {
  /** A custom event (`eventOrigin: custom`) of the update's user; its id is derived from the update. */
  track: Track;
}

export type TgIngestMiddleware<C extends Context> = MiddlewareFn<C> & {
  readonly tracker: BotTracker;
  /** Sends what is queued and waits for it. */
  flush(): Promise<void>;
  /** Sends what is queued (at most `shutdownTimeoutMs`), then stops. Also done by itself when the process exits. */
  close(): Promise<void>;
};

/** `bot.use(tgIngest({ baseUrl, apiKey }))`: maps the update, queues its events and calls `next()` at once. */
export function tgIngest<C extends Context = Context>(options: TgIngestOptions): TgIngestMiddleware<C> {
  const tracker = new BotTracker(options);
  const middleware: MiddlewareFn<C> = (ctx, next) => {
    (ctx as C & TgIngestFlavor).track = tracker.observe(ctx.update, ctx.me);
    return next();
  };
  return Object.assign(middleware, {
    tracker,
    flush: () => tracker.flush(),
    close: () => tracker.close(),
  });
}
