// Bot snapshots of a group commit: the latest one per bot.
import type { WriteRequest } from './sink.js';
import type { BotRow } from './statements.js';

export function latestBots(batch: readonly WriteRequest[]): BotRow[] {
  const bots = new Map<string, BotRow>();
  for (const req of batch) if (req.bot !== null) bots.set(req.botId, { ...req.bot, botId: req.botId });
  return [...bots.values()];
}
