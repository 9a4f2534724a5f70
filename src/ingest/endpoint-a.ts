// Endpoint A, POST /tg/webapp (alias /messenger/webapp): events from mini-app code, the user
// identified by initData signed with Ed25519. The main thread reads botId and initData itself
// (it must know the bot before it can check anything); mini-app batches are small.
// Order of checks: bot, initData signature and age, bot settings, rate limit per (bot, user), quota.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { BotResolver } from '../auth/bots.js';
import { checkAge, dataCheckString, parseInitData } from '../auth/initdata.js';
import { HttpError } from '../errors.js';
import type { Handler, Request, Reply } from '../http/server.js';
import type { TokenBuckets } from '../limits/token-bucket.js';
import { isObject, processWebappBatch, type UserSeen } from '../pipeline/batch.js';
import { decodeJson } from '../pipeline/decode.js';
import { parseEventId } from '../pipeline/event.js';
import { commitBatch, type CommitDeps } from './commit.js';
import { checkContentType, isGzip } from './headers.js';
import type { IngestPool } from './pool.js';

export interface WebappEndpointDeps extends CommitDeps {
  bots: BotResolver;
  buckets: TokenBuckets;
  pool: IngestPool;
  maxBodyBytes: number;
  publicKeys: readonly string[];
  maxAgeS: number;
  nowS?: () => number;
  onRateLimited?: () => void;
  onVerify?: (cached: boolean) => void;
}

interface Verified {
  user: UserSeen;
  authDate: number;
}

export interface CorsPolicy {
  origins: readonly string[];
}

export function corsHeaders(req: Request, policy: CorsPolicy): Record<string, string> {
  const origin = req.headers.origin;
  const exposed = 'Retry-After, X-Request-Id';
  if (policy.origins.includes('*')) return { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': exposed };
  if (origin !== undefined && policy.origins.includes(origin)) {
    return { 'Access-Control-Allow-Origin': origin, Vary: 'Origin', 'Access-Control-Expose-Headers': exposed };
  }
  return { Vary: 'Origin' };
}

/** The preflight's own headers; Access-Control-Allow-Origin comes with every reply on these paths. */
export function corsPreflight(): Handler {
  return () => ({
    status: 204,
    headers: {
      'Access-Control-Allow-Methods': 'POST, OPTIONS',
      'Access-Control-Allow-Headers': 'Content-Type, Content-Encoding, X-Request-Id',
      'Access-Control-Max-Age': '86400',
    },
  });
}

export function webappEndpoint(deps: WebappEndpointDeps): Handler {
  const nowS = deps.nowS ?? (() => Math.floor(Date.now() / 1000));
  // A session reuses one initData for every batch: verify it once, until it expires.
  const verified = new LRUCache<string, Verified>({ max: 200_000, ttl: deps.maxAgeS * 1000 });

  async function authenticate(botId: string, messengerBotId: string, initData: string): Promise<UserSeen> {
    const key = createHash('sha256').update(`${botId}\n${messengerBotId}\n${initData}`).digest('base64');
    const hit = verified.get(key);
    if (hit !== undefined) {
      const age = checkAge(hit.authDate, nowS(), deps.maxAgeS);
      if (age !== null) throw new HttpError(age);
      deps.onVerify?.(true);
      return hit.user;
    }
    const parsed = parseInitData(initData);
    if (!parsed.ok) throw new HttpError(parsed.code);
    const now = nowS();
    const age = checkAge(parsed.data.authDate, now, deps.maxAgeS);
    if (age !== null) throw new HttpError(age);
    const message = dataCheckString(messengerBotId, parsed.data.fields);
    // Verification always runs in the pool: a flood of forged strings must not stall the main thread.
    const result = await deps.pool.runInPool({ kind: 'verify', message, signature: parsed.data.signature, publicKeys: deps.publicKeys });
    deps.onVerify?.(false);
    if (!('verified' in result) || !result.verified) throw new HttpError('initdata_signature_invalid');
    const ttl = (parsed.data.authDate + deps.maxAgeS - now) * 1000;
    if (ttl > 0) verified.set(key, { user: parsed.data.user, authDate: parsed.data.authDate }, { ttl });
    return parsed.data.user;
  }

  return async (req, readBody): Promise<Reply> => {
    checkContentType(req, true);
    const gzip = isGzip(req);
    const raw = await readBody();
    const decoded = decodeJson(raw, gzip, deps.maxBodyBytes);
    if (!decoded.ok) throw new HttpError(decoded.refusal.code, decoded.refusal.message, decoded.refusal.details);
    const body = decoded.value;
    if (!isObject(body)) throw new HttpError('invalid_body');
    const botId = parseEventId(body.botId);
    if (botId === null) throw new HttpError('bot_id_invalid');
    let bot;
    try {
      bot = await deps.bots.resolve(botId);
    } catch {
      throw new HttpError('unavailable', 'The bot could not be looked up right now; retry shortly.', undefined, 2);
    }
    if (bot === null) throw new HttpError('bot_unknown');
    if (bot.messengerBotId === null) throw new HttpError('webapp_bot_not_configured');
    const initData = isObject(body.auth) ? body.auth.initData : undefined;
    if (typeof initData !== 'string' || initData.trim() === '') throw new HttpError('initdata_empty', 'auth.initData is missing or empty.');
    const user = await authenticate(botId, bot.messengerBotId, initData);
    if (bot.projectId === null) throw new HttpError('webapp_bot_not_linked');
    if (!bot.miniAppIngest) throw new HttpError('miniapp_ingest_disabled');
    const rate = deps.buckets.take(`${botId}:${user.id}`);
    if (!rate.ok) {
      deps.onRateLimited?.();
      throw new HttpError('rate_limited', undefined, undefined, rate.retryAfterS);
    }
    const projectId = bot.projectId;
    await deps.quota.check(projectId);
    const receivedAt = new Date().toISOString();
    const ctx = { projectId, botId, receivedAt, channel: 'webapp' as const };
    // Small batches, already parsed here, are normalized inline; large ones are parsed again in a worker.
    const result = deps.pool.inline(decoded.bytes.byteLength)
      ? processWebappBatch(body.events, ctx, user, decoded.bytes.byteLength)
      : await deps.pool.runInPool({ kind: 'webapp', body: decoded.bytes, ctx, user });
    if (!('ok' in result)) throw new Error('unexpected worker result');
    if (!result.ok) throw new HttpError(result.refusal.code, result.refusal.message, result.refusal.details);
    return commitBatch(deps, result.batch, { channel: 'webapp', projectId, botId, connection: `webapp:${botId}`, receivedAt, authoritativeProfiles: true });
  };
}
