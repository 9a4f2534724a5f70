// Ingestion: the bot_api and webapp endpoints, the load shedder in front of them and the record of when each token
// was last used.
import { HttpError } from '../../base/errors.js';
import { TokenUse } from '../../auth/token-use.js';
import type { Handler } from '../../http/server.js';
import { botApiEndpoint } from '../../ingest/bot-api.js';
import { webappEndpoint } from '../../ingest/webapp.js';
import { LoopDelay } from '../../limits/loop-delay.js';
import { LoadShedder } from '../../limits/shedding.js';
import { TokenBuckets } from '../../limits/token-bucket.js';
import { ingestionSchemas } from './schemas.js';
import type { Shared, Wing } from '../wing.js';
import { ingestionRoutes } from './routes.js';

/** `closing`: true once the service is shutting down (new requests are turned away to be retried elsewhere). */
export function ingestionWing(s: Shared, closing: () => boolean): Wing {
  const { config } = s;
  const tokenUse = new TokenUse(s.sql, s.log);
  const loopDelay = new LoopDelay();
  const shedder = new LoadShedder(
    {
      queueDelayMs: () => s.sink.queueDelayMs,
      inHand: () => s.sink.holdsRequests || s.pool.inlineQueue.length > 0,
      // The main thread's delay: before a request is read, or before its body's turn (inline-queue.ts). The larger of
      // the two, not their sum: one stall shows in both.
      loopDelayMs: () => Math.max(loopDelay.ms, s.pool.inlineQueue.waitMs),
      holdsShare: (projectId) => s.derived.holdsShare(projectId),
    },
    // A queued request waits up to BATCH_MAX_WAIT_MS by design while another batch commits: not being behind.
    config.batchMaxWaitMs + config.shedQueueDelayMs,
    () => s.metrics.shed(),
  );
  const quality = {
    plans: s.plans,
    liveSample: (projectId: string) => s.live.sampleFor(projectId),
    suppressions: s.suppressions,
  };
  const botApi = botApiEndpoint({
    tokens: s.tokens,
    tokenUse,
    buckets: new TokenBuckets(s.bucketOptions),
    authFailures: s.authFailures,
    lowPriorityLookups: s.lowPriorityLookups,
    pool: s.pool,
    ...s.commit,
    closing,
    ...quality,
    limits: { maxBytes: config.maxBodyBytes, maxDepth: config.maxJsonDepth, maxProfiles: config.maxProfilesPerRequest },
    onRateLimited: () => s.metrics.limited('bot_api'),
  });
  const webapp = webappEndpoint({
    bots: s.bots,
    sessions: s.sessions,
    buckets: new TokenBuckets(s.bucketOptions),
    authFailures: s.authFailures,
    pool: s.pool,
    ...s.commit,
    ...quality,
    limits: { maxBytes: config.webappMaxBodyBytes, maxDepth: config.maxJsonDepth },
    onRateLimited: () => s.metrics.limited('webapp'),
  });
  const webappUnlessClosing: Handler = (req, readBody) => {
    if (closing()) throw new HttpError('shutting_down', { retryAfterS: 1 });
    return webapp(req, readBody);
  };
  // Shedding asks first, from the request's head: on bot_api the key's project when it is in memory (see LoadShedder).
  const backlog = { admitted: () => shedder.admitted(), answered: () => shedder.answered() };
  return {
    name: 'ingestion',
    schemas: ingestionSchemas(),
    routes: ingestionRoutes({
      botApi,
      webapp: webappUnlessClosing,
      shedBotApi: {
        refusal: (header) => (closing() ? null : shedder.refusal(s.tokens.projectOf(header('x-api-key').trim()), true)),
        ...backlog,
      },
      shedWebapp: { refusal: () => (closing() ? null : shedder.refusal()), ...backlog },
      webappMaxBodyBytes: config.webappMaxBodyBytes,
    }),
    async stop() {
      loopDelay.stop();
      await tokenUse.stop();
    },
  };
}
