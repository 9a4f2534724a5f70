// Endpoint B's credentials: per-bot tokens, stored only as SHA-256 digests. A lookup goes by
// digest, so a response time can never tell which prefix of a token matched.
import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import { RefreshingCache } from './refreshing-cache.js';

export const TOKEN_PREFIX = 'tgk_';

export interface TokenInfo {
  tokenId: string;
  botId: string;
  projectId: string | null;
  apiIngest: boolean;
}

const UNKNOWN = Object.freeze({ unknown: true as const });
type Cached = TokenInfo | typeof UNKNOWN;

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function newToken(): { token: string; hash: Buffer; hint: string } {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token), hint: `${token.slice(0, 8)}…` };
}

export class TokenResolver {
  private readonly cache: RefreshingCache<Cached>;

  constructor(private readonly sql: Sql, ttlMs: number) {
    this.cache = new RefreshingCache((key) => this.load(key), ttlMs, ttlMs * 2, 100_000);
  }

  get stats() {
    return this.cache.stats;
  }

  /** null: unknown or revoked. Throws when the database cannot answer and nothing is cached. */
  async resolve(token: string): Promise<TokenInfo | null> {
    if (!token.startsWith(TOKEN_PREFIX) || token.length > 128) return null;
    // Keyed by the token itself, in memory only, so a hit costs no hashing; the database sees the digest.
    const v = await this.cache.get(token);
    return 'unknown' in v ? null : v;
  }

  /** After a local change (revocation, bot settings): forget at once on this instance. */
  forgetToken(tokenId: string): void {
    this.cache.deleteWhere((v) => !('unknown' in v) && v.tokenId === tokenId);
  }

  forgetBot(botId: string): void {
    this.cache.deleteWhere((v) => !('unknown' in v) && v.botId === botId);
  }

  private async load(token: string): Promise<Cached> {
    const [row] = await this.sql<{ token_id: string; bot_id: string; project_id: string | null; api_ingest: boolean }[]>`
      SELECT t.token_id, t.bot_id, b.project_id, b.api_ingest
      FROM api_tokens t JOIN bots b USING (bot_id)
      WHERE t.token_hash = ${hashToken(token)} AND t.revoked_at IS NULL`;
    return row === undefined ? UNKNOWN : { tokenId: row.token_id, botId: row.bot_id, projectId: row.project_id, apiIngest: row.api_ingest };
  }
}
