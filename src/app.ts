// Composition of the service: database, writer, worker pool, caches, limiters and routes.
import { adminGuard, mountAdmin } from './admin/api.js';
import { LiveHub } from './http/live.js';
import { mountQuality } from './admin/quality-api.js';
import { QualityStore } from './quality/store.js';
import { QuarantinePruner } from './quality/pruner.js';
import { mountAdminPage } from './admin/page.js';
import { AdminStore } from './admin/store.js';
import { loadTokenTags, TokenResolver } from './auth/api-tokens.js';
import { BotResolver } from './auth/bots.js';
import { MiniAppSessions } from './auth/sessions.js';
import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { connect, type Sql } from './db/connect.js';
import { migrate, schemaReady } from './db/migrations.js';
import { maintainPartitions } from './db/partitions.js';
import { watchDatabase } from './db/watch.js';
import { PATHS, routeGroup } from './endpoints.js';
import { HttpError } from './errors.js';
import { BodyBudget, DerivedBytes } from './limits/body-budget.js';
import { corsHeaders, corsPreflight } from './http/cors.js';
import { type Handler, HttpServer, type Reply, type Request } from './http/server.js';
import { Readiness } from './http/readiness.js';
import { Tarpit } from './http/tarpit.js';
import { botApiEndpoint } from './ingest/bot-api.js';
import type { CommitTarget } from './ingest/commit.js';
import { PlanCache } from './quality/plans.js';
import { IngestStats } from './quality/stats.js';
import { webappEndpoint } from './ingest/webapp.js';
import { AuthFailures } from './limits/auth-failures.js';
import { Quota } from './limits/quota.js';
import { PgLeaseStore } from './limits/quota-leases.js';
import { TokenBuckets } from './limits/token-bucket.js';
import type { Logger } from './log.js';
import { Metrics } from './metrics.js';
import { openApiDocument } from './openapi.js';
import type { BatchResult } from './pipeline/batch.js';
import { QuarantineBudget } from './quality/quarantine-budget.js';
import { IngestPool } from './worker/pool.js';
import { GroupCommitWriter } from './writer/group-commit.js';
import type { WriteOutcome } from './writer/sink.js';

export interface AppOptions {
  config: Readonly<Config>;
  databaseUrl: string;
  adminToken: string;
  log: Logger;
}

export interface App {
  port: number;
  /** The admin listener's port when ADMIN_PORT is set. */
  adminPort: number | null;
  /** Stops accepting, answers what is in flight, commits what is queued, closes pool and database. */
  shutdown(): Promise<void>;
}

async function waitForDatabase(sql: Sql, log: Logger, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`SELECT 1`;
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      log.warn({ attempt, err: (err as Error).message }, 'database not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function startApp({ config, databaseUrl, adminToken, log }: AppOptions): Promise<App> {
  // This process among the instances sharing the database: its ledger rows and allowance leases.
  const instanceId = randomUUID();
  const sql = connect(databaseUrl, { max: config.dbPoolSize, name: 'tg-ingest' });
  await waitForDatabase(sql, log);
  const applied = await migrate(sql);
  if (applied.length > 0) log.info({ versions: applied }, 'migrations applied');
  const tokenTags = await loadTokenTags(sql);
  // Partitions exist well before rows need them; old ones go when EVENTS_RETENTION_MONTHS says so.
  const maintain = async () => {
    const m = await maintainPartitions(sql, config.eventsRetentionMonths);
    if (m.created.length + m.dropped.length > 0) log.info(m, 'event partitions maintained');
  };
  await maintain();
  const partitioner = setInterval(() => maintain().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'maintaining event partitions failed')), 3_600_000);
  partitioner.unref();
  const unwatch = watchDatabase(sql, log);

  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes);
  const tarpit = new Tarpit({ delayMs: config.authRateLimitedDelayMs, max: config.authRateLimitedHeldMax });
  // Late-bound: the probes read objects created just below.
  const metrics: Metrics = new Metrics({
    poolQueue: () => pool.queueSize,
    poolUtilization: () => pool.utilization,
    writerPending: () => sink.pending,
    writerQueuedRows: () => sink.queuedRows,
    bodyBytes: () => bodyBudget.bytes,
    heldAnswers: () => tarpit.held,
    liveViewers: () => live.watching,
    caches: () => ({ token: tokens.stats, bot: bots.stats, allowance: quota.stats, tracking_plan: plans.stats, initdata: sessions.stats }),
    tasks: () => pool.tasks,
    laneWaiting: () => pool.laneWaiting,
    quarantineDropped: () => quarantineBudget.droppedTotal,
  });
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
  const bots = new BotResolver(sql, config.authCacheTtlMs, config.authCacheMaxEntries);
  // A lease admits events for a few seconds and counts for the others until its last batches have
  // had their time to commit.
  const leaseMs = Math.max(1000, 2 * config.authCacheTtlMs);
  const leases = new PgLeaseStore(sql, { instanceId, leaseMs, holdMs: config.writeTimeoutMs + 5000 });
  const quota = new Quota(sql, leases, { ttlMs: config.authCacheTtlMs, leaseMs, waitLimitMs: config.writeTimeoutMs });
  const plans = new PlanCache(sql, config.authCacheTtlMs);
  const guard = adminGuard(adminToken, config.adminAuthFailuresPerMin);
  const live = new LiveHub({ perSecond: config.liveMessagesPerS, authorize: guard.authorize, failed: guard.failed, trustProxy: config.trustProxy });
  const quality = new QualityStore(sql, config.maxJsonDepth);
  const quarantineBudget = new QuarantineBudget(sql, config.quarantineMaxBytes, config.authCacheTtlMs);
  const pruner = new QuarantinePruner(quality, {
    maxEvents: config.quarantineMaxEvents, retentionDays: config.quarantineRetentionDays, everyMs: config.quarantinePruneEveryMs, flushDropped: () => quarantineBudget.flush(),
  }, log);
  const stats = new IngestStats();
  const authFailures = new AuthFailures({
    perAddress: { burst: config.authFailureBurst, perMin: config.authFailureRefillPerS * 60, maxKeys: 100_000 },
    perBot: { burst: config.initDataFailureBurstPerBot, perMin: config.initDataFailureRefillPerSPerBot * 60, maxKeys: 100_000 },
  });
  const sessions = new MiniAppSessions({ publicKeys: config.initDataPublicKeys, maxAgeS: config.initDataMaxAgeS, failures: authFailures, verify: (check, priority, admit) => pool.verify(check, priority, admit) });
  const onOutcome = (t: CommitTarget, b: BatchResult, o: WriteOutcome | null) => {
    metrics.batch(t.channel, b.accepted + b.rejected + b.duplicated, {
      accepted: b.accepted, rejected: b.rejected, duplicated: b.duplicated,
      stored: o?.stored ?? 0, stored_not_billed: o?.storedNotBilled ?? 0, redelivered: o?.redelivered ?? 0,
    }, b.diagnosticCounts);
    stats.record(t.projectId, { accepted: b.accepted, rejected: b.rejected, duplicated: b.duplicated, storedNotBilled: o?.storedNotBilled ?? 0, redelivered: o?.redelivered ?? 0 }, b.diagnosticCounts);
    if (o !== null) metrics.quarantine(b.quarantineCodes);
    if (o !== null && b.quarantineCount > 0) pruner.quarantined(t.projectId);
    if (b.live !== null) live.publish(t.projectId, { channel: t.channel, botId: t.botId, receivedAt: t.receivedAt }, b.live, b.accepted + b.rejected + b.duplicated);
  };
  const quality$ = { plans, liveSample: (projectId: string) => live.sampleFor(projectId) };
  const commit$ = { quota, sink, derived: new DerivedBytes(bodyBudget), quarantineBudget, onOutcome };
  const bucketOptions = { burst: config.rateLimitBurst, perMin: config.rateLimitPerMin };
  const cors = { origins: config.corsAllowOrigins };
  const webappPaths = new Set<string>(PATHS.webapp);

  const onReply = (req: Request, reply: Reply, ms: number) => {
    const group = routeGroup(req.path);
    metrics.request(group, reply.status, ms / 1000);
    if (reply.status === 429 && (reply.body as { error?: string } | undefined)?.error === 'auth_rate_limited') metrics.authLimitedOn(group);
    if (log.isLevelEnabled('debug')) log.debug({ requestId: req.requestId, method: req.method, path: req.path, status: reply.status, ms: Math.round(ms * 10) / 10 }, 'request');
  };
  const serverOptions = {
    maxBodyBytes: config.maxBodyBytes,
    bodyBudget,
    tarpit,
    trustProxy: config.trustProxy,
    onError: (req: Request, err: unknown) => log.error({ requestId: req.requestId, path: req.path, err }, 'request failed'),
    onReply,
  };
  const server = new HttpServer({ ...serverOptions, baseHeaders: (req) => (webappPaths.has(req.path) ? corsHeaders(req, cors) : undefined) });
  // /admin and /metrics on a listener of their own when ADMIN_PORT is set; on the main one otherwise.
  const adminServer = config.adminPort === null ? server : new HttpServer(serverOptions);
  const servers = adminServer === server ? [server] : [server, adminServer];
  const closing = () => server.closing;

  // While shutting down, new requests on kept-alive connections are turned away to be retried elsewhere.
  const unlessClosing = (h: Handler): Handler => (req, readBody) => {
    if (closing()) throw new HttpError('shutting_down', { retryAfterS: 1 });
    return h(req, readBody);
  };
  const methodNotAllowed = (allow: string): Handler => () => ({ status: 405, headers: { Allow: allow }, body: { error: 'method_not_allowed', message: `Use ${allow}.` } });

  const botApi = botApiEndpoint({
    tokens, buckets: new TokenBuckets(bucketOptions), authFailures, pool, ...commit$, closing, ...quality$,
    limits: { maxBytes: config.maxBodyBytes, maxDepth: config.maxJsonDepth, maxProfiles: config.maxProfilesPerRequest },
    onRateLimited: () => metrics.limited('bot_api'),
  });
  const webapp = unlessClosing(webappEndpoint({
    bots, sessions, buckets: new TokenBuckets(bucketOptions), authFailures, pool, ...commit$, ...quality$,
    limits: { maxBytes: config.webappMaxBodyBytes, maxDepth: config.maxJsonDepth },
    onRateLimited: () => metrics.limited('webapp'),
  }));
  for (const path of PATHS.bot_api) server.route('post', path, botApi).route('any', path, methodNotAllowed('POST'));
  for (const path of PATHS.webapp) {
    server.route('post', path, webapp, { maxBodyBytes: config.webappMaxBodyBytes }).route('options', path, corsPreflight()).route('any', path, methodNotAllowed('POST, OPTIONS'));
  }

  // The page first: its routes are more specific than the API's.
  mountAdminPage(adminServer);
  const hooks = {
    tokenRevoked: (tokenId: string) => tokens.forgetToken(tokenId),
    botChanged: (botId: string) => {
      tokens.forgetBot(botId);
      bots.forget(botId);
    },
    allowanceChanged: (projectId: string) => quota.forget(projectId),
    trackingPlanChanged: (projectId: string) => plans.forget(projectId),
  };
  const projects = new AdminStore(sql, tokenTags);
  mountAdmin(adminServer, projects, { guard, stats: (projectId) => stats.get(projectId), hooks });
  mountQuality(adminServer, projects, quality, {
    guard, hooks, maxJsonDepth: config.maxJsonDepth,
    compile: (plan) => pool.compilePlan(plan),
    replay: { sql, sink, quota, plans, recheck: (items) => pool.recheck(items, config.maxJsonDepth), onReplayed: (r) => metrics.replay(r) },
  });
  live.mount(adminServer.app, PATHS.adminLive);
  // On the main listener /metrics needs the admin token (Prometheus sends it as a bearer token); on a
  // listener of its own (ADMIN_PORT), reachable only where it is bound, it needs none, as before.
  const metricsText: Handler = async () => ({ status: 200, contentType: 'text/plain; version=0.0.4; charset=utf-8', body: await metrics.text() });
  adminServer.route('get', PATHS.metrics, adminServer === server ? guard(metricsText) : metricsText);

  // /readyz answers from a state refreshed at most once a second, never a query per request.
  const readiness = new Readiness(async () => ((await schemaReady(sql)) ? 'ready' : 'migrations_pending'));
  await readiness.refresh();
  const ready = (): Reply => {
    if (closing()) return { status: 503, body: { status: 'shutting_down' }, headers: { 'Retry-After': '1' } };
    const state = readiness.state;
    return state === 'ready' ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { status: state }, headers: { 'Retry-After': '1' } };
  };
  for (const s of servers) {
    s.route('get', PATHS.openapi, () => ({ status: 200, body: openApiDocument() }));
    s.route('get', PATHS.health, () => ({ status: 200, body: { status: 'ok' } }));
    s.route('get', PATHS.ready, ready);
    s.route('any', '/*', () => ({ status: 404, body: { error: 'not_found', message: 'Not found.' } }));
  }

  const port = await server.listen(config.host, config.port);
  const adminPort = adminServer === server ? null : await adminServer.listen(config.adminHost!, config.adminPort!);

  let shuttingDown: Promise<void> | null = null;
  return {
    port,
    adminPort,
    shutdown() {
      shuttingDown ??= (async () => {
        for (const s of servers) s.stopListening();
        tarpit.release();
        unwatch();
        readiness.stop();
        pruner.stop();
        clearInterval(partitioner);
        const deadline = new Promise((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
        await Promise.race([Promise.all(servers.map((s) => s.drained())), deadline]);
        await sink.close();
        await pool.close();
        await sql.end({ timeout: 5 });
      })();
      return shuttingDown;
    },
  };
}
