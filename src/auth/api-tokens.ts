// The bot_api endpoint's credentials: per-bot tokens, stored only as SHA-256 digests. A lookup
// goes by digest, so a response time can never tell which prefix of a token matched.
//
// An issued token carries a tag: an HMAC of its random part under a secret the deployment's
// instances share (in the database). A key whose tag is wrong was never issued here, so a flood of
// made-up keys is refused from memory instead of costing a lookup each on the one database every
// instance shares. The tag only spares lookups: whether a key is valid is always the database's
// answer, so a leaked secret costs lookups, never access.
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import { batchLoader } from '../cache/batch-loader.js';
import { RefreshingCache } from '../cache/refreshing-cache.js';

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
  /** The token's own bucket (PATCH /admin/tokens/:tokenId); null: RATE_LIMIT_PER_MIN and RATE_LIMIT_BURST. */
  rateLimit: { perMin: number | null; burst: number | null } | null;
}

export function hashToken(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

const RANDOM_BYTES = 24;
const TAG_BYTES = 8;

export class TokenTags {
  constructor(private readonly secret: Buffer) {}

  /** A new token: 24 random bytes and their tag, 43 base64url characters after the prefix. */
  issue(): string {
    const random = randomBytes(RANDOM_BYTES);
    return TOKEN_PREFIX + Buffer.concat([random, this.tag(random)]).toString('base64url');
  }

  /** For a token-shaped key: whether it carries the tag of its random part. */
  carries(token: string): boolean {
    const raw = Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url');
    return timingSafeEqual(raw.subarray(RANDOM_BYTES), this.tag(raw.subarray(0, RANDOM_BYTES)));
  }

  private tag(random: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(random).digest().subarray(0, TAG_BYTES);
  }
}

/** The deployment's tag secret, made by the migrations. */
export async function loadTokenTags(sql: Sql): Promise<TokenTags> {
  const [row] = await sql<{ value: Buffer }[]>`SELECT value FROM deployment_secrets WHERE name = 'api_token_tag'`;
  if (row === undefined) throw new Error('deployment_secrets has no api_token_tag: the migrations did not run');
  return new TokenTags(row.value);
}

export function newToken(tags: TokenTags): { token: string; hash: Buffer; hint: string } {
  const token = tags.issue();
  return { token, hash: hashToken(token), hint: `${token.slice(0, 8)}…` };
}

export function isTokenShaped(token: string): boolean {
  return TOKEN_SHAPE.test(token);
}

export class TokenResolver {
  private readonly cache: RefreshingCache<TokenInfo>;
  /** Whether a live token issued before tags may exist; true until the database said otherwise. */
  private untaggedLive = true;
  private untaggedCheckedAt = -Infinity;
  private untaggedChecking = false;

  constructor(
    private readonly sql: Sql,
    private readonly tags: TokenTags,
    private readonly ttlMs: number,
    maxEntries = 100_000,
  ) {
    this.cache = new RefreshingCache(
      batchLoader((keys) => this.load(keys)),
      { what: 'API key', ttlMs, maxStaleMs: ttlMs * 2, max: maxEntries, negativeMax: 10_000 },
    );
  }

  get stats() {
    return this.cache.stats;
  }

  /** True when resolving `token` costs no query of its own (cached either way, being read, or refused from memory). */
  cheap(token: string): boolean {
    return !isTokenShaped(token) || this.cache.cached(token) || this.cache.loading(token) || this.neverIssued(token);
  }

  /** Whether only this deployment can have made the key: it carries the tag (not whether it is valid). */
  carriesTag(token: string): boolean {
    return isTokenShaped(token) && this.tags.carries(token);
  }

  /** The project of a token known in memory, without a query or a refresh; null when it is not (or has none). */
  projectOf(token: string): string | null {
    return this.cache.peek(token)?.projectId ?? null;
  }

  /** null: unknown or revoked. Throws LookupFailed when the database cannot answer and nothing is cached. */
  async resolve(token: string): Promise<TokenInfo | null> {
    if (!isTokenShaped(token)) return null;
    // Keyed by the token itself, in memory only, so a hit costs no hashing; the database sees the digest.
    if (!this.cache.cached(token) && this.neverIssued(token)) return null;
    return this.cache.get(token);
  }

  /** A key without its tag, when no token issued before tags is live. */
  private neverIssued(token: string): boolean {
    return !this.tags.carries(token) && !this.untaggedMayBeLive();
  }

  /**
   * Asked of the database at start, then at most once per AUTH_CACHE_TTL_MS in the background; the last answer
   * meanwhile.
   */
  private untaggedMayBeLive(): boolean {
    if (!this.untaggedChecking && performance.now() - this.untaggedCheckedAt >= this.ttlMs) {
      this.checkUntagged().catch(() => undefined); // kept as it was; asked again on the next untagged key
    }
    return this.untaggedLive;
  }

  async checkUntagged(): Promise<void> {
    const at = performance.now();
    this.untaggedChecking = true;
    try {
      const [row] = await this.sql<
        { live: boolean }[]
      >`SELECT EXISTS (SELECT 1 FROM api_tokens WHERE NOT tagged AND revoked_at IS NULL) AS live`;
      this.untaggedLive = row?.live ?? true;
      this.untaggedCheckedAt = at;
    } finally {
      this.untaggedChecking = false;
    }
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
    const rows = await this.sql<
      {
        hash: string;
        token_id: string;
        bot_id: string;
        project_id: string | null;
        api_ingest: boolean;
        messenger_bot_id: string | null;
        rate_limit_per_min: number | null;
        rate_limit_burst: number | null;
      }[]
    >`
      SELECT encode(t.token_hash, 'hex') AS hash, t.token_id, t.bot_id, b.project_id, b.api_ingest, b.messenger_bot_id,
        t.rate_limit_per_min, t.rate_limit_burst
      FROM api_tokens t JOIN bots b USING (bot_id)
      WHERE t.token_hash = ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest(${hashes}::text[]) AS h)) AND t.revoked_at IS NULL`;
    const byHash = new Map(rows.map((r) => [r.hash, r]));
    const found = new Map<string, TokenInfo>();
    tokens.forEach((token, i) => {
      const row = byHash.get(hashes[i]!);
      if (row !== undefined)
        found.set(token, {
          tokenId: row.token_id,
          botId: row.bot_id,
          projectId: row.project_id,
          apiIngest: row.api_ingest,
          messengerBotId: row.messenger_bot_id,
          rateLimit:
            row.rate_limit_per_min === null && row.rate_limit_burst === null
              ? null
              : { perMin: row.rate_limit_per_min, burst: row.rate_limit_burst },
        });
    });
    return found;
  }
}
