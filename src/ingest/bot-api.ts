// The bot_api endpoint, POST /tg (alias /messenger): events from a bot's backend, authenticated by
// a per-bot token in X-API-Key. Order of checks: headers, token, rate limit (before any body work),
// bot settings, quota, then the body.
import type { TokenUse } from '../auth/token-use.js';
import type { TokenResolver } from '../auth/api-tokens.js';
import { refuseCheaply, resolveCredential } from '../auth/credential-checks.js';
import { HttpError } from '../base/errors.js';
import type { Handler } from '../http/server.js';
import type { AuthFailures } from '../limits/auth-failures.js';
import type { SerialLane } from '../limits/serial-lane.js';
import type { TakeResult, TokenBuckets } from '../limits/token-bucket.js';
import { checkRoom, commitBatch, type CommitDeps } from './commit.js';
import { checkContentType, isGzip } from './headers.js';
import type { IngestPool } from '../worker/pool.js';
import type { IngestLimits } from '../worker/tasks.js';
import type { PlanCache } from '../quality/plan-cache.js';

/** What both endpoints ask before normalizing: the plan in force, whether someone watches, who is suppressed. */
export interface QualityDeps {
  plans: PlanCache;
  /** How many events of a batch the live view wants (0: nobody watches this project). */
  liveSample: (projectId: string) => number;
  /** The project's suppressed users (an erasure with suppress), from memory. */
  suppressions: {
    get(projectId: string): Promise<BigInt64Array | null>;
    getCached(projectId: string): BigInt64Array | null | undefined;
  };
}

export interface BotApiDeps extends CommitDeps, QualityDeps {
  tokens: TokenResolver;
  /** Notes, in memory, that a token was used (written once a minute). */
  tokenUse: TokenUse;
  buckets: TokenBuckets;
  authFailures: AuthFailures;
  /** Lookups of tagged keys from addresses past their failure budget, one at a time. */
  lowPriorityLookups: SerialLane;
  pool: IngestPool;
  limits: IngestLimits;
  /** True while shutting down: new requests are turned away. */
  closing: () => boolean;
  onRateLimited?: () => void;
}

function rateHeaders(r: TakeResult): Record<string, string> {
  return {
    'RateLimit-Limit': String(r.limit),
    'RateLimit-Remaining': String(r.remaining),
    'RateLimit-Reset': String(r.resetS),
  };
}

export function botApiEndpoint(deps: BotApiDeps): Handler {
  return async (req, readBody) => {
    if (deps.closing()) throw new HttpError('shutting_down', { retryAfterS: 1 });
    checkContentType(req, false);
    const gzip = isGzip(req);
    const key = req.headers['x-api-key']?.trim();
    if (key === undefined || key === '')
      refuseCheaply(deps.authFailures, req.address, new HttpError('api_key_missing'));
    // A key that would cost a query is refused to an address that keeps presenting unknown ones, unless it carries
    // the tag: then it waits for the low-priority lane, and a valid one is served.
    const token = await resolveCredential(
      deps.authFailures,
      req.address,
      deps.tokens,
      key,
      () => new HttpError('api_key_invalid'),
      deps.lowPriorityLookups,
    );
    deps.tokenUse.note(token.tokenId);
    const rate = deps.buckets.take(token.tokenId, token.rateLimit);
    // From here every answer, a refusal too, tells the token's bucket, as the IETF draft expects.
    req.replyHeaders = rateHeaders(rate);
    if (!rate.ok) {
      deps.onRateLimited?.();
      throw new HttpError('rate_limited', { retryAfterS: rate.retryAfterS });
    }
    if (!token.apiIngest) throw new HttpError('api_ingest_disabled');
    if (token.projectId === null) throw new HttpError('bot_not_linked');
    const projectId = token.projectId;
    await deps.quota.check(projectId);
    checkRoom(deps, projectId, Number(req.headers['content-length']) || 0);
    const plan = await deps.plans.get(projectId);
    // From memory on nearly every request: null (no one suppressed) is an answer too.
    const cachedSuppressed = deps.suppressions.getCached(projectId);
    const suppressed = cachedSuppressed !== undefined ? cachedSuppressed : await deps.suppressions.get(projectId);
    const body = await readBody();
    // The body counts against the project's share while the request holds it.
    // Its length now: moved to a worker, the buffer reads as empty.
    const bodyBytes = body.byteLength;
    deps.derived.holdBody(projectId, bodyBytes);
    try {
      const receivedAt = new Date().toISOString();
      const connection = `token:${token.tokenId}`;
      const ctx = {
        projectId,
        botId: token.botId,
        receivedAt,
        channel: 'bot_api' as const,
        connection,
        userId: null,
        messengerBotId: token.messengerBotId,
        plan,
        liveSample: deps.liveSample(projectId),
        suppressed,
      };
      const result = await deps.pool.botApi(body, gzip, deps.limits, ctx);
      if (!result.ok) throw HttpError.from(result.refusal);
      return await commitBatch(deps, result.batch, {
        channel: 'bot_api',
        projectId,
        botId: token.botId,
        connection,
        receivedAt,
        authoritativeProfiles: false,
      });
    } finally {
      deps.derived.releaseBody(projectId, bodyBytes);
    }
  };
}
