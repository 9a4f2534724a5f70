// The webapp endpoint, POST /tg/webapp (alias /messenger/webapp): events from mini-app code, the
// user identified by initData signed with Ed25519. Before anything about the sender is known, only
// the envelope is read (botId and auth.initData, from the beginning of the body; see the worker
// pool's unauthenticated lane), and a refused one counts against the client address's failure
// budget like a failed signature. Order of checks: envelope, bot, initData signature and age, bot
// settings, rate limit per (bot, user), quota, then the events.
import type { BotResolver } from '../auth/bots.js';
import { refuseCheaply, resolveCredential } from '../auth/credential-checks.js';
import type { MiniAppSessions } from '../auth/sessions.js';
import { HttpError } from '../base/errors.js';
import type { Handler, Reply } from '../http/server.js';
import type { AuthFailures } from '../limits/auth-failures.js';
import type { TokenBuckets } from '../limits/token-bucket.js';
import type { BodyLimits } from '../pipeline/decode.js';
import type { IngestPool } from '../worker/pool.js';
import type { QualityDeps } from './bot-api.js';
import { checkRoom, commitBatch, type CommitDeps } from './commit.js';
import { checkContentType, isGzip } from './headers.js';

export interface WebappDeps extends CommitDeps, QualityDeps {
  bots: BotResolver;
  sessions: MiniAppSessions;
  buckets: TokenBuckets;
  authFailures: AuthFailures;
  pool: IngestPool;
  limits: BodyLimits;
  onRateLimited?: () => void;
}

/**
 * The envelope, bot and user of a webapp body, or an HttpError. An address past its failure budget waits in the
 * low-priority lane for anything it costs, and so does a request from an address holding its share of the queue: its
 * place is held from its envelope (when that goes to the worker lane) to the start of its signature check.
 */
async function authenticate(deps: WebappDeps, address: string, raw: Uint8Array, gzip: boolean) {
  const claim = deps.sessions.share.claim(address);
  try {
    const opened = await deps.pool.openWebapp(
      raw,
      gzip,
      deps.limits,
      deps.authFailures.retryAfterS(address) > 0 ? 'low' : 'normal',
      () => claim.take(),
    );
    if (!opened.ok) refuseCheaply(deps.authFailures, address, HttpError.from(opened.refusal));
    const { botId, initData } = opened.envelope;
    // A bot id that would cost a query is refused to an address that keeps sending unknown ones.
    const bot = await resolveCredential(
      deps.authFailures,
      address,
      deps.bots,
      botId,
      () => new HttpError('bot_unknown'),
    );
    if (bot.messengerBotId === null) throw new HttpError('webapp_bot_not_configured');
    if (initData === null)
      refuseCheaply(
        deps.authFailures,
        address,
        new HttpError('initdata_empty', { message: 'auth.initData is missing or empty.' }),
      );
    const user = await deps.sessions.check(address, botId, bot.messengerBotId, initData, claim);
    return { opened, botId, bot, user };
  } finally {
    claim.release();
  }
}

export function webappEndpoint(deps: WebappDeps): Handler {
  return async (req, readBody): Promise<Reply> => {
    checkContentType(req, true);
    const gzip = isGzip(req);
    const raw = await readBody();
    const { opened, botId, bot, user } = await authenticate(deps, req.address, raw, gzip);
    if (bot.projectId === null) throw new HttpError('webapp_bot_not_linked');
    if (!bot.miniAppIngest) throw new HttpError('miniapp_ingest_disabled');
    const rate = deps.buckets.take(`${botId}:${user.id}`);
    if (!rate.ok) {
      deps.onRateLimited?.();
      throw new HttpError('rate_limited', { retryAfterS: rate.retryAfterS });
    }
    const projectId = bot.projectId;
    await deps.quota.check(projectId);
    checkRoom(deps, projectId, raw.byteLength);
    // Its length now: moved to a worker, the buffer reads as empty.
    const bodyBytes = raw.byteLength;
    deps.derived.holdBody(projectId, bodyBytes);
    try {
      const plan = await deps.plans.get(projectId);
      // From memory on nearly every request: null (no one suppressed) is an answer too.
      const cachedSuppressed = deps.suppressions.getCached(projectId);
      const suppressed = cachedSuppressed !== undefined ? cachedSuppressed : await deps.suppressions.get(projectId);
      const receivedAt = new Date().toISOString();
      const connection = `webapp:${botId}`;
      const ctx = {
        projectId,
        botId,
        receivedAt,
        channel: 'webapp' as const,
        connection,
        userId: user.id,
        plan,
        liveSample: deps.liveSample(projectId),
        suppressed,
      };
      const result = await deps.pool.webapp(opened, raw, gzip, deps.limits, ctx, user);
      if (!result.ok) throw HttpError.from(result.refusal);
      return await commitBatch(deps, result.batch, {
        channel: 'webapp',
        projectId,
        botId,
        connection,
        receivedAt,
        authoritativeProfiles: true,
      });
    } finally {
      deps.derived.releaseBody(projectId, bodyBytes);
    }
  };
}
