// Telegraf middleware: every update the bot receives becomes canonical events in tg-ingest (the table is shared with
// @tg-ingest/grammy, in @tg-ingest/client/updates), and `ctx.track()` adds the bot's own events.
import {
  type BotTrackerOptions,
  type Track,
  type TrackerStats,
  type TrackOptions,
  type TrackProps,
  type UpdateMiddleware,
  updateMiddleware,
} from '@tg-ingest/client/updates';
import type { Context, MiddlewareFn } from 'telegraf';

export type { Track, TrackerStats, TrackOptions, TrackProps };
export type TgIngestOptions = BotTrackerOptions;

/** Add to the bot's context type (`Telegraf<Context & TgIngestFlavor>`) to type `ctx.track`. */
export interface TgIngestFlavor {
  /** A custom event (`eventOrigin: custom`) of the update's user; its id is derived from the update. */
  track: Track;
}

export type TgIngestMiddleware<C extends Context> = MiddlewareFn<C> & UpdateMiddleware<C>;

/** `bot.use(tgIngest({ baseUrl, apiKey }))`: maps the update, queues its events and calls `next()` at once. */
export function tgIngest<C extends Context = Context>(options: TgIngestOptions): TgIngestMiddleware<C> {
  return updateMiddleware<C>(options, (ctx) => ({ update: ctx.update, bot: ctx.botInfo }));
}
