// The bot_api endpoint's credentials: per-bot tokens, stored only as SHA-256 digests. A lookup
// goes by digest, so a response time can never tell which prefix of a token matched.
import { hash, randomBytes } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import { batchLoader } from './batch-loader.js';
import { RefreshingCache } from './refreshing-cache.js';

export const TOKEN_PREFIX = 'tgk_';
/** Exactly what newToken() issues: anything else is refused without a query. */
const TOKEN_SHAPE = /^tgk_[A-Za-z0-9_-]{43}$/;

export interface TokenInfo {
  tokenId: string;
  botId: string;
  projectId: string | null;
  apiIngest: boolean;
  /** The bot's messenger id as configured through the admin API. */
  messengerBotId: string | null;
}

export function hashToken(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

export function newToken(): { token: string; hash: Buffer; hint: string } {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token), hint: `${token.slice(0, 8)}…` };
}

export function isTokenShaped(token: string): boolean {
  return TOKEN_SHAPE.test(token);
}

export class TokenResolver {
  private readonly cache: RefreshingCache<TokenInfo>;

  constructor(private readonly sql: Sql, ttlMs: number, maxEntries = 100_000) {
    this.cache = new RefreshingCache(batchLoader((keys) => this.load(keys)), { what: 'API key', ttlMs, maxStaleMs: ttlMs * 2, max: maxEntries, negativeMax: 10_000 });
  }

  get stats() {
    return this.cache.stats;
  }

  /** True when resolving `token` costs no database query (cached either way, or refused by shape). */
  cheap(token: string): boolean {
    return !isTokenShaped(token) || this.cache.cached(token);
  }

  /** null: unknown or revoked. Throws LookupFailed when the database cannot answer and nothing is cached. */
  async resolve(token: string): Promise<TokenInfo | null> {
    if (!isTokenShaped(token)) return null;
    // Keyed by the token itself, in memory only, so a hit costs no hashing; the database sees the digest.
    return this.cache.get(token);
  }

  /** After a local change (revocation, bot settings): forget at once on this instance. */
  forgetToken(tokenId: string): void {
    this.cache.deleteWhere((v) => v.tokenId === tokenId);
  }

  forgetBot(botId: string): void {
    this.cache.deleteWhere((v) => v.botId === botId);
  }

  private async load(tokens: string[]): Promise<Map<string, TokenInfo>> {
    // Digests travel as hex text: postgres.js has no array type for bytea.
    const hashes = tokens.map((t) => hashToken(t).toString('hex'));
    const rows = await this.sql<{ hash: string; token_id: string; bot_id: string; project_id: string | null; api_ingest: boolean; messenger_bot_id: string | null }[]>`
      SELECT encode(t.token_hash, 'hex') AS hash, t.token_id, t.bot_id, b.project_id, b.api_ingest, b.messenger_bot_id
      FROM api_tokens t JOIN bots b USING (bot_id)
      WHERE t.token_hash = ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest(${hashes}::text[]) AS h)) AND t.revoked_at IS NULL`;
    const byHash = new Map(rows.map((r) => [r.hash, r]));
    const found = new Map<string, TokenInfo>();
    tokens.forEach((token, i) => {
      const row = byHash.get(hashes[i]!);
      if (row !== undefined) found.set(token, { tokenId: row.token_id, botId: row.bot_id, projectId: row.project_id, apiIngest: row.api_ingest, messengerBotId: row.messenger_bot_id });
    });
    return found;
  }
}
