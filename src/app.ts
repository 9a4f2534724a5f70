// Composition of the service: database, writer, worker pool, caches, limiters and routes.
import { mountAdmin } from './admin/api.js';
import { mountAdminPage } from './admin/page.js';
import { openApiDocument } from './openapi.js';
import { AdminStore } from './admin/store.js';
import { TokenResolver } from './auth/api-tokens.js';
import { BotResolver } from './auth/bots.js';
import type { Config } from './config.js';
import { connect, type Sql } from './db/connect.js';
import { migrate, schemaReady } from './db/migrations.js';
import { HttpError } from './errors.js';
import { HttpServer, type Handler } from './http/server.js';
import { corsHeaders, corsPreflight, webappEndpoint } from './ingest/endpoint-a.js';
import { serverEndpoint } from './ingest/endpoint-b.js';
import type { CommitTarget } from './ingest/commit.js';
import { IngestPool } from './ingest/pool.js';
import { IngestStats } from './ingest/stats.js';
import { Quota } from './ingest/quota.js';
import { TokenBuckets } from './limits/token-bucket.js';
import type { Logger } from './log.js';
import { endpointOf, Metrics } from './metrics.js';
import type { BatchResult } from './pipeline/batch.js';
import { type WriteOutcome, Writer } from './writer/writer.js';

export interface AppOptions {
  config: Readonly<Config>;
  databaseUrl: string;
  adminToken: string;
  log: Logger;
}

export interface App {
  port: number;
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
  const sql = connect(databaseUrl, { max: config.dbPoolSize, name: 'tg-ingest' });
  await waitForDatabase(sql, log);
  const applied = await migrate(sql);
  if (applied.length > 0) log.info({ versions: applied }, 'migrations applied');

  const verifications = { hits: 0, misses: 0 };
  // Late-bound: the probes read objects created just below.
  const metrics: Metrics = new Metrics({
    poolQueue: () => pool.queueSize,
    poolUtilization: () => pool.utilization,
    writerPending: () => writer.pendingRequests,
    caches: () => ({ token: tokens.stats, bot: bots.stats, plan: quota.stats, initdata: verifications }),
  });
  const writer = new Writer({
    url: databaseUrl,
    connections: config.dbWriterConnections,
    batchMaxRows: config.batchMaxRows,
    batchMaxWaitMs: config.batchMaxWaitMs,
    writeTimeoutMs: config.writeTimeoutMs,
    onCommit: (c) => metrics.commit(c.path, c.rows, c.ms / 1000),
    onError: (err, kind) => {
      metrics.dbError(kind);
      if (kind !== 'conflict') log.warn({ kind, code: (err as { code?: string }).code, err: (err as Error).message }, 'group commit failed');
    },
  });
  const pool = new IngestPool(config.workers, config.inlineMaxBytes);
  const tokens = new TokenResolver(sql, config.authCacheTtlMs);
  const bots = new BotResolver(sql, config.authCacheTtlMs);
  const quota = new Quota(sql, config.authCacheTtlMs, config.writeTimeoutMs);
  const stats = new IngestStats();
  const onOutcome = (t: CommitTarget, b: BatchResult, o: WriteOutcome | null) => {
    metrics.batch(t.channel === 'bot_api' ? 'server' : 'webapp', b.accepted + b.rejected + b.duplicated, {
      accepted: b.accepted, rejected: b.rejected, duplicated: b.duplicated,
      stored: o?.stored ?? 0, stored_not_billed: o?.storedNotBilled ?? 0, redelivered: o?.redelivered ?? 0,
    }, b.diagnosticCounts);
    stats.record(t.projectId, { accepted: b.accepted, rejected: b.rejected, duplicated: b.duplicated, storedNotBilled: o?.storedNotBilled ?? 0, redelivered: o?.redelivered ?? 0 }, b.diagnosticCounts);
  };
  const bucketOptions = { burst: config.rateLimitBurst, perMin: config.rateLimitPerMin };
  const cors = { origins: config.corsAllowOrigins };
  const webappPaths = new Set(['/tg/webapp', '/messenger/webapp']);

  const server = new HttpServer({
    maxBodyBytes: config.maxBodyBytes,
    baseHeaders: (req) => (webappPaths.has(req.path) ? corsHeaders(req, cors) : undefined) ?? {},
    onError: (req, err) => log.error({ requestId: req.requestId, path: req.path, err }, 'request failed'),
    onReply: (req, reply, ms) => {
      metrics.request(endpointOf(req.path), reply.status, ms / 1000);
      if (log.isLevelEnabled('debug')) log.debug({ requestId: req.requestId, method: req.method, path: req.path, status: reply.status, ms: Math.round(ms * 10) / 10 }, 'request');
    },
  });

  // While shutting down, new requests on kept-alive connections are turned away to be retried elsewhere.
  const unlessClosing = (h: Handler): Handler => (req, readBody) => {
    if (server.closing) throw new HttpError('shutting_down', undefined, undefined, 1);
    return h(req, readBody);
  };
  const methodNotAllowed = (allow: string): Handler => () => ({ status: 405, headers: { Allow: allow }, body: { error: 'method_not_allowed', message: `Use ${allow}.` } });

  const b = serverEndpoint({
    tokens, buckets: new TokenBuckets(bucketOptions), pool, quota, writer, maxBodyBytes: config.maxBodyBytes, onOutcome,
    closing: () => server.closing,
    onRateLimited: () => metrics.limited('server'),
  });
  const a = unlessClosing(webappEndpoint({
    bots, buckets: new TokenBuckets(bucketOptions), pool, quota, writer, maxBodyBytes: config.maxBodyBytes, onOutcome,
    publicKeys: config.initDataPublicKeys, maxAgeS: config.initDataMaxAgeS,
    onRateLimited: () => metrics.limited('webapp'),
    onVerify: (cached) => void (cached ? verifications.hits++ : verifications.misses++),
  }));
  for (const path of ['/tg', '/messenger']) server.route('post', path, b).route('any', path, methodNotAllowed('POST'));
  for (const path of webappPaths) {
    server.route('post', path, a).route('options', path, corsPreflight()).route('any', path, methodNotAllowed('POST, OPTIONS'));
  }

  // The page first: its routes are more specific than the API's.
  mountAdminPage(server);
  mountAdmin(server, new AdminStore(sql), adminToken, (projectId) => stats.get(projectId), {
    tokenRevoked: (tokenId) => tokens.forgetToken(tokenId),
    botChanged: (botId) => {
      tokens.forgetBot(botId);
      bots.forget(botId);
    },
    planChanged: (projectId) => quota.forget(projectId),
  });

  server.route('get', '/openapi.json', () => ({ status: 200, body: openApiDocument() }));
  server.route('get', '/metrics', async () => ({ status: 200, contentType: 'text/plain; version=0.0.4; charset=utf-8', body: await metrics.text() }));
  server.route('get', '/healthz', () => ({ status: 200, body: { status: 'ok' } }));
  server.route('get', '/readyz', async () => {
    try {
      if (server.closing) return { status: 503, body: { status: 'shutting_down' }, headers: { 'Retry-After': '1' } };
      if (!(await schemaReady(sql))) return { status: 503, body: { status: 'migrations_pending' }, headers: { 'Retry-After': '1' } };
      return { status: 200, body: { status: 'ready' } };
    } catch {
      return { status: 503, body: { status: 'database_unreachable' }, headers: { 'Retry-After': '1' } };
    }
  });
  server.route('any', '/*', () => ({ status: 404, body: { error: 'not_found', message: 'Not found.' } }));

  const port = await server.listen(config.host, config.port);

  let shuttingDown: Promise<void> | null = null;
  return {
    port,
    shutdown() {
      shuttingDown ??= (async () => {
        server.stopListening();
        const deadline = new Promise((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
        await Promise.race([server.drained(), deadline]);
        await writer.close();
        await pool.close();
        await sql.end({ timeout: 5 });
      })();
      return shuttingDown;
    },
  };
}
