// Bot snapshots of a group commit: the latest one per bot.
import type { WriteRequest } from './sink.js';
import type { BotRow } from './statements.js';

export function latestBots(batch: readonly WriteRequest[]): BotRow[] {
  const bots = new Map<string, BotRow>();
  for (const { target, batch: b } of batch)
    if (b.bot !== null) bots.set(target.botId, { ...b.bot, botId: target.botId });
  return [...bots.values()];
}
