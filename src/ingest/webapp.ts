// The webapp endpoint, POST /tg/webapp (alias /messenger/webapp): events from mini-app code, the
// user identified by initData signed with Ed25519. The bot and the session are read from the body
// first (inline for a small body, in a worker otherwise). Order of checks: bot, initData signature
// and age, bot settings, rate limit per (bot, user), quota, then the events.
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { BotResolver } from '../auth/bots.js';
import { checkAge, dataCheckString, parseInitData } from '../auth/initdata.js';
import { HttpError } from '../errors.js';
import type { Handler, Reply } from '../http/server.js';
import type { AuthFailures } from '../limits/auth-failures.js';
import type { TokenBuckets } from '../limits/token-bucket.js';
import type { UserSeen } from '../model.js';
import { commitBatch, type CommitDeps } from './commit.js';
import { costlyCheck, refuseCheaply, resolveCredential } from './credential-checks.js';
import { checkContentType, isGzip } from './headers.js';
import type { QualityDeps } from './bot-api.js';
import type { IngestPool } from './pool.js';

export interface WebappDeps extends CommitDeps, QualityDeps {
  bots: BotResolver;
  buckets: TokenBuckets;
  authFailures: AuthFailures;
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

export function webappEndpoint(deps: WebappDeps): Handler {
  const nowS = deps.nowS ?? (() => Math.floor(Date.now() / 1000));
  // A session reuses one initData for every batch: verify it once, until it expires.
  const verified = new LRUCache<string, Verified>({ max: 200_000, ttl: deps.maxAgeS * 1000 });

  async function authenticate(address: string, botId: string, messengerBotId: string, initData: string): Promise<UserSeen> {
    const key = hash('sha256', `${botId}\n${messengerBotId}\n${initData}`, 'base64');
    const hit = verified.get(key);
    if (hit !== undefined) {
      const age = checkAge(hit.authDate, nowS(), deps.maxAgeS);
      if (age !== null) throw new HttpError(age);
      deps.onVerify?.(true);
      return hit.user;
    }
    const refuse = (err: HttpError): never => refuseCheaply(deps.authFailures, address, err);
    const wait = deps.authFailures.retryAfterS(address, botId);
    if (wait > 0) throw new HttpError('auth_rate_limited', { retryAfterS: wait });
    const parsed = parseInitData(initData);
    if (!parsed.ok) return refuse(new HttpError(parsed.code));
    const now = nowS();
    const age = checkAge(parsed.data.authDate, now, deps.maxAgeS);
    if (age !== null) return refuse(new HttpError(age));
    const message = dataCheckString(messengerBotId, parsed.data.fields);
    const ok = await costlyCheck(deps.authFailures, address, botId, () => deps.pool.verify({ message, signature: parsed.data.signature, publicKeys: deps.publicKeys }), (passed) => passed);
    deps.onVerify?.(false);
    if (!ok) throw new HttpError('initdata_signature_invalid');
    const ttl = (parsed.data.authDate + deps.maxAgeS - now) * 1000;
    if (ttl > 0) verified.set(key, { user: parsed.data.user, authDate: parsed.data.authDate }, { ttl });
    return parsed.data.user;
  }

  return async (req, readBody): Promise<Reply> => {
    checkContentType(req, true);
    const gzip = isGzip(req);
    const raw = await readBody();
    const opened = await deps.pool.openWebapp(raw, gzip, deps.maxBodyBytes);
    if (!opened.ok) throw HttpError.from(opened.refusal);
    const { botId, initData } = opened.envelope;
    // A bot id that would cost a query is refused to an address that keeps sending unknown ones.
    const bot = await resolveCredential(deps.authFailures, req.address, deps.bots, botId, () => new HttpError('bot_unknown'));
    if (bot.messengerBotId === null) throw new HttpError('webapp_bot_not_configured');
    if (initData === null) refuseCheaply(deps.authFailures, req.address, new HttpError('initdata_empty', { message: 'auth.initData is missing or empty.' }));
    const user = await authenticate(req.address, botId, bot.messengerBotId, initData);
    if (bot.projectId === null) throw new HttpError('webapp_bot_not_linked');
    if (!bot.miniAppIngest) throw new HttpError('miniapp_ingest_disabled');
    const rate = deps.buckets.take(`${botId}:${user.id}`);
    if (!rate.ok) {
      deps.onRateLimited?.();
      throw new HttpError('rate_limited', { retryAfterS: rate.retryAfterS });
    }
    const projectId = bot.projectId;
    await deps.quota.check(projectId);
    const plan = await deps.plans.get(projectId);
    const receivedAt = new Date().toISOString();
    const connection = `webapp:${botId}`;
    const ctx = { projectId, botId, receivedAt, channel: 'webapp' as const, connection, userId: user.id, plan, liveSample: deps.liveSample(projectId) };
    const result = await deps.pool.webapp(opened, ctx, user);
    if (!result.ok) throw HttpError.from(result.refusal);
    return commitBatch(deps, result.batch, { channel: 'webapp', projectId, botId, connection, receivedAt, authoritativeProfiles: true });
  };
}
