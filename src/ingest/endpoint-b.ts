// Endpoint B, POST /tg (alias /messenger): events from a bot's backend, authenticated by a per-bot
// token in X-API-Key. Order of checks: headers, token, rate limit (before any body work), bot
// settings, quota, then the body.
import type { TokenResolver } from '../auth/api-tokens.js';
import { HttpError } from '../errors.js';
import { errorReply, type Handler, type Reply } from '../http/server.js';
import type { TakeResult, TokenBuckets } from '../limits/token-bucket.js';
import { commitBatch, type CommitDeps } from './commit.js';
import { checkContentType, isGzip } from './headers.js';
import type { IngestPool } from './pool.js';

export interface ServerEndpointDeps extends CommitDeps {
  tokens: TokenResolver;
  buckets: TokenBuckets;
  pool: IngestPool;
  maxBodyBytes: number;
  /** True while shutting down: new requests are turned away (with their RateLimit-* headers). */
  closing: () => boolean;
  onRateLimited?: () => void;
}

function rateHeaders(r: TakeResult): Record<string, string> {
  return { 'RateLimit-Limit': String(r.limit), 'RateLimit-Remaining': String(r.remaining), 'RateLimit-Reset': String(r.resetS) };
}

export function serverEndpoint(deps: ServerEndpointDeps): Handler {
  return async (req, readBody) => {
    const seen: { rate: TakeResult | null } = { rate: null };
    let reply: Reply;
    try {
      reply = await handle();
    } catch (err) {
      reply = errorReply(err);
    }
    // On every response, as the IETF draft expects; before the token is known, a full bucket.
    reply.headers = { ...reply.headers, ...rateHeaders(seen.rate ?? deps.buckets.fresh()) };
    return reply;

    async function handle(): Promise<Reply> {
      if (deps.closing()) throw new HttpError('shutting_down', undefined, undefined, 1);
      checkContentType(req, false);
      const gzip = isGzip(req);
      const key = req.headers['x-api-key']?.trim();
      if (key === undefined || key === '') throw new HttpError('api_key_missing');
      let token;
      try {
        token = await deps.tokens.resolve(key);
      } catch {
        throw new HttpError('unavailable', 'The API key could not be checked right now; retry shortly.', undefined, 2);
      }
      if (token === null) throw new HttpError('api_key_invalid');
      const rate = (seen.rate = deps.buckets.take(token.tokenId));
      if (!rate.ok) {
        deps.onRateLimited?.();
        throw new HttpError('rate_limited', undefined, undefined, rate.retryAfterS);
      }
      if (!token.apiIngest) throw new HttpError('api_ingest_disabled');
      if (token.projectId === null) throw new HttpError('bot_not_linked');
      const projectId = token.projectId;
      await deps.quota.check(projectId);
      const body = await readBody();
      const receivedAt = new Date().toISOString();
      const ctx = { projectId, botId: token.botId, receivedAt, channel: 'bot_api' as const };
      const result = await deps.pool.run({ kind: 'server', body, gzip, maxBodyBytes: deps.maxBodyBytes, ctx }, body.byteLength);
      if (!('ok' in result)) throw new Error('unexpected worker result');
      if (!result.ok) throw new HttpError(result.refusal.code, result.refusal.message, result.refusal.details);
      return commitBatch(deps, result.batch, { channel: 'bot_api', projectId, botId: token.botId, connection: `token:${token.tokenId}`, receivedAt, authoritativeProfiles: false });
    }
  };
}
