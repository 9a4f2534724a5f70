// The parts more than one wing uses, built once from the configuration: writer, worker pool, credentials, limits,
// what events are checked against, the live view and the metrics. Each wing builds its own parts from these
// (src/wings/); nothing here listens or runs in the background but the probes and the timers `stop` ends.
import { randomUUID } from 'node:crypto';
import { adminGuard } from '../admin/api.js';
import { AdminStore } from '../admin/store.js';
import { loadTokenTags, TokenResolver } from '../auth/api-tokens.js';
import { SuppressionCache } from '../privacy/suppressions.js';
import { BotResolver } from '../auth/bots.js';
import { AddressShare } from '../auth/address-share.js';
import { MiniAppSessions } from '../auth/sessions.js';
import type { Config } from '../config/config.js';
import type { Sql } from '../db/connect.js';
import { schemaReady } from '../db/migrate.js';
import { LiveHub } from '../http/live.js';
import { Readiness } from '../http/readiness.js';
import { Tarpit } from '../http/tarpit.js';
import type { CommitTarget } from '../ingest/commit.js';
import { AuthFailures } from '../limits/auth-failures.js';
import { BodyBudget, DerivedBytes } from '../limits/body-budget.js';
import { Quota } from '../limits/quota.js';
import { PgLeaseStore } from '../limits/quota-leases.js';
import type { Logger } from '../base/log.js';
import { type CacheCounts, Metrics } from '../metrics/metrics.js';
import type { BatchResult } from '../pipeline/batch.js';
import { PlanCache } from '../quality/plan-cache.js';
import { QuarantineBudget } from '../quality/quarantine-budget.js';
import { IngestStats } from '../quality/stats.js';
import { QualityStore } from '../quality/store.js';
import { IngestPool } from '../worker/pool.js';
import { GroupCommitWriter } from '../writer/group-commit.js';
import { SerialLane } from '../limits/serial-lane.js';
import { HttpError } from '../base/errors.js';
import type { Shared, WingHooks } from '../wings/wing.js';
import type { WriteOutcome } from '../writer/sink.js';

/** The answer when the lane of lookups past a failure budget is full. */
const LOOKUPS_FULL = new HttpError('overloaded', {
  message: 'Too many credential lookups are waiting for their turn; retry after the delay in Retry-After.',
  retryAfterS: 1,
});

/** The shared parts, and what the app itself needs of the HTTP front. */
export interface SharedParts extends Shared {
  bodyBudget: BodyBudget;
  tarpit: Tarpit;
  /** Stops the timers (the writer, pool and database are closed by the shutdown). */
  stop(): void;
}

export async function buildShared(
  config: Readonly<Config>,
  sql: Sql,
  databaseUrl: string,
  adminToken: string,
  log: Logger,
): Promise<SharedParts> {
  // This process among the instances sharing the database: its ledger rows and allowance leases.
  const instanceId = randomUUID();
  const tokenTags = await loadTokenTags(sql);
  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes);
  const tarpit = new Tarpit({ delayMs: config.authRateLimitedDelayMs, max: config.authRateLimitedHeldMax });
  // One address holds at most an eighth of the lane: a leaked tag secret cannot keep others' valid keys out.
  const lowPriorityLookups = new SerialLane(
    config.authLowPriorityQueue,
    Math.max(1, Math.ceil(config.authLowPriorityQueue / 8)),
    () => LOOKUPS_FULL,
  );
  // Late-bound: the probes read parts created just below.
  const metrics: Metrics = new Metrics({
    poolQueue: () => pool.queueSize,
    poolUtilization: () => pool.utilization,
    writerPending: () => sink.pending,
    writerQueuedRows: () => sink.queuedRows,
    writerQueueDelayMs: () => sink.queueDelayMs,
    inlineQueueWaitMs: () => pool.inlineQueue.waitMs,
    bodyBytes: () => bodyBudget.bytes,
    heldAnswers: () => tarpit.held,
    liveViewers: () => live.watching,
    caches: () => Object.fromEntries([...caches].map(([name, counts]) => [name, counts()])),
    tasks: () => pool.tasks,
    unauthenticatedWaiting: () => pool.unauthenticatedWaiting,
    quarantineDropped: () => quarantineBudget.droppedTotal,
    lowPriorityLookups: () => lowPriorityLookups.started,
  });
  const hooks: WingHooks = { erasureParts: [], quarantined: [] };
  const derived = new DerivedBytes(bodyBudget);
  const sink = new GroupCommitWriter({
    url: databaseUrl,
    connections: config.dbWriterConnections,
    batchMaxRows: config.batchMaxRows,
    batchMaxWaitMs: config.batchMaxWaitMs,
    writeTimeoutMs: config.writeTimeoutMs,
    maxQueuedRows: config.writerMaxQueuedRows,
    instanceId,
    onCommit: (c) => metrics.commit(c.path, c.rows, c.ms / 1000),
    onRedelivery: () => metrics.redelivery(),
    onError: (err, kind) => {
      metrics.dbError(kind);
      log.warn({ kind, code: (err as { code?: string }).code, err: (err as Error).message }, 'group commit failed');
    },
  });
  const pool = new IngestPool({
    threads: config.workers,
    inlineMaxBytes: config.inlineMaxBytes,
    // Unauthenticated work never takes every worker (with one worker it has to share it).
    laneConcurrency: Math.max(1, config.workers - 1),
    laneQueueMax: config.initDataVerifyQueue,
    lowQueueMax: config.authLowPriorityQueue,
    envelopeMaxBytes: config.webappEnvelopeMaxBytes,
  });
  const tokens = new TokenResolver(sql, tokenTags, config.authCacheTtlMs, config.authCacheMaxEntries);
  await tokens.checkUntagged();
  const suppressions = new SuppressionCache(sql, config.authCacheTtlMs);
  const bots = new BotResolver(sql, config.authCacheTtlMs, config.authCacheMaxEntries);
  // A lease admits events for a few seconds and counts for the others until its last batches have
  // had their time to commit.
  const leaseMs = Math.max(1000, 2 * config.authCacheTtlMs);
  const leases = new PgLeaseStore(sql, { instanceId, leaseMs, holdMs: config.writeTimeoutMs + 5000 });
  const quota = new Quota(sql, leases, { ttlMs: config.authCacheTtlMs, leaseMs, waitLimitMs: config.writeTimeoutMs });
  const plans = new PlanCache(sql, config.authCacheTtlMs);
  const guard = adminGuard(adminToken, config.adminAuthFailuresPerMin);
  const live = new LiveHub({
    perSecond: config.liveMessagesPerS,
    authorize: guard.authorize,
    failed: guard.failed,
    trustProxy: config.trustProxy,
  });
  const quality = new QualityStore(sql, config.maxJsonDepth);
  const quarantineBudget = new QuarantineBudget(sql, config.quarantineMaxBytes, config.authCacheTtlMs);
  const stats = new IngestStats();
  const authFailures = new AuthFailures({
    perAddress: { burst: config.authFailureBurst, perMin: config.authFailureRefillPerS * 60, maxKeys: 100_000 },
    perBot: {
      burst: config.initDataFailureBurstPerBot,
      perMin: config.initDataFailureRefillPerSPerBot * 60,
      maxKeys: 100_000,
    },
  });
  // A quarter of INITDATA_VERIFY_QUEUE per address, for signature checks and envelopes alike.
  const queueShares = new AddressShare(Math.max(1, Math.floor(config.initDataVerifyQueue / 4)));
  const sessions = new MiniAppSessions({
    publicKeys: config.initDataPublicKeys,
    maxAgeS: config.initDataMaxAgeS,
    failures: authFailures,
    verify: (check, priority, admit) => pool.verify(check, priority, admit),
    share: queueShares,
  });
  // After every batch: metrics, the per-project stats, the wings told of quarantined events, the live view.
  const onOutcome = (t: CommitTarget, b: BatchResult, o: WriteOutcome | null) => {
    metrics.batch(
      t.channel,
      b.accepted + b.rejected + b.duplicated,
      {
        accepted: b.accepted,
        rejected: b.rejected,
        duplicated: b.duplicated,
        stored: o?.stored ?? 0,
        stored_not_billed: o?.storedNotBilled ?? 0,
        redelivered: o?.redelivered ?? 0,
      },
      b.diagnosticCounts,
    );
    stats.record(
      t.projectId,
      {
        accepted: b.accepted,
        rejected: b.rejected,
        duplicated: b.duplicated,
        storedNotBilled: o?.storedNotBilled ?? 0,
        redelivered: o?.redelivered ?? 0,
      },
      b.diagnosticCounts,
    );
    if (o !== null) metrics.quarantine(b.quarantineCodes);
    if (o !== null && b.quarantineCount > 0) for (const h of hooks.quarantined) h(t.projectId);
    if (b.live !== null)
      live.publish(
        t.projectId,
        { channel: t.channel, botId: t.botId, receivedAt: t.receivedAt },
        b.live,
        b.accepted + b.rejected + b.duplicated,
      );
  };
  // /readyz answers from a state refreshed once a second, never a query per request.
  const readiness = new Readiness(async () => ((await schemaReady(sql)) ? 'ready' : 'migrations_pending'));
  await readiness.refresh();
  const caches = new Map<string, () => CacheCounts>([
    ['token', () => tokens.stats],
    ['bot', () => bots.stats],
    ['allowance', () => quota.stats],
    ['tracking_plan', () => plans.stats],
    ['suppressions', () => suppressions.stats],
    ['initdata', () => sessions.stats],
  ]);
  return {
    config,
    log,
    sql,
    databaseUrl,
    metrics,
    caches,
    sink,
    pool,
    readiness,
    tokens,
    tokenTags,
    bots,
    sessions,
    authFailures,
    lowPriorityLookups,
    bucketOptions: { burst: config.rateLimitBurst, perMin: config.rateLimitPerMin },
    quota,
    plans,
    suppressions,
    stats,
    quality,
    quarantineBudget,
    live,
    commit: { quota, sink, derived, quarantineBudget, onOutcome },
    derived,
    projects: new AdminStore(sql, tokenTags),
    guard,
    cacheHooks: {
      tokenChanged: (tokenId) => tokens.forgetToken(tokenId),
      botChanged: (botId) => {
        tokens.forgetBot(botId);
        bots.forget(botId);
      },
      allowanceChanged: (projectId) => quota.forget(projectId),
      trackingPlanChanged: (projectId) => plans.forget(projectId),
      suppressionsChanged: (projectId) => suppressions.forget(projectId),
    },
    hooks,
    bodyBudget,
    tarpit,
    stop() {
      tarpit.release();
      readiness.stop();
    },
  };
}
