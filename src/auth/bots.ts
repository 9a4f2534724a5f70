// The webapp endpoint's view of a bot, by the service bot id sent in the body.
import type { Sql } from '../db/connect.js';
import { batchLoader } from '../cache/batch-loader.js';
import { RefreshingCache } from '../cache/refreshing-cache.js';

export interface BotInfo {
  botId: string;
  projectId: string | null;
  messengerBotId: string | null;
  miniAppIngest: boolean;
}

export class BotResolver {
  private readonly cache: RefreshingCache<BotInfo>;

  constructor(
    private readonly sql: Sql,
    ttlMs: number,
    maxEntries = 100_000,
  ) {
    this.cache = new RefreshingCache(
      batchLoader((ids) => this.load(ids)),
      { what: 'bot', ttlMs, maxStaleMs: ttlMs * 2, max: maxEntries, negativeMax: 10_000 },
    );
  }

  get stats() {
    return this.cache.stats;
  }

  /** True when resolving costs no query of its own: cached either way, or already being read. */
  cheap(botId: string): boolean {
    return this.cache.cached(botId) || this.cache.loading(botId);
  }

  /** null: no such bot. Throws LookupFailed when the database cannot answer and nothing is cached. */
  resolve(botId: string): Promise<BotInfo | null> {
    return this.cache.get(botId);
  }

  forget(botId: string): void {
    this.cache.delete(botId);
  }

  private async load(botIds: string[]): Promise<Map<string, BotInfo>> {
    const rows = await this.sql<
      { bot_id: string; project_id: string | null; messenger_bot_id: string | null; mini_app_ingest: boolean }[]
    >`
      SELECT bot_id, project_id, messenger_bot_id, mini_app_ingest FROM bots WHERE bot_id = ANY(${botIds}::uuid[])`;
    return new Map(
      rows.map((r) => [
        r.bot_id,
        {
          botId: r.bot_id,
          projectId: r.project_id,
          messengerBotId: r.messenger_bot_id,
          miniAppIngest: r.mini_app_ingest,
        },
      ]),
    );
  }
}
