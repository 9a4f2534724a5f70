// Endpoint A's view of a bot, by the service bot id sent in the body.
import type { Sql } from '../db/connect.js';
import { RefreshingCache } from './refreshing-cache.js';

export interface BotInfo {
  botId: string;
  projectId: string | null;
  messengerBotId: string | null;
  miniAppIngest: boolean;
}

const UNKNOWN = Object.freeze({ unknown: true as const });
type Cached = BotInfo | typeof UNKNOWN;

export class BotResolver {
  private readonly cache: RefreshingCache<Cached>;

  constructor(private readonly sql: Sql, ttlMs: number) {
    this.cache = new RefreshingCache((id) => this.load(id), ttlMs, ttlMs * 2, 100_000);
  }

  get stats() {
    return this.cache.stats;
  }

  /** null: no such bot. Throws when the database cannot answer and nothing is cached. */
  async resolve(botId: string): Promise<BotInfo | null> {
    const v = await this.cache.get(botId);
    return 'unknown' in v ? null : v;
  }

  forget(botId: string): void {
    this.cache.delete(botId);
  }

  private async load(botId: string): Promise<Cached> {
    const [row] = await this.sql<{ project_id: string | null; messenger_bot_id: string | null; mini_app_ingest: boolean }[]>`
      SELECT project_id, messenger_bot_id, mini_app_ingest FROM bots WHERE bot_id = ${botId}`;
    return row === undefined ? UNKNOWN : { botId, projectId: row.project_id, messengerBotId: row.messenger_bot_id, miniAppIngest: row.mini_app_ingest };
  }
}
