// What answers where: the two ingestion endpoints on the main listener; the admin page, API, live
// view and /metrics on the admin listener (the main one unless ADMIN_PORT); probes, the OpenAPI
// document and the 404 on both. Adding a route means adding it here.
import { mountAdmin } from '../admin/api.js';
import { mountAdminPage } from '../admin/page.js';
import { mountPrivacy } from '../admin/privacy-api.js';
import { mountReports } from '../admin/reports-api.js';
import { PrivacyStore } from '../privacy/store.js';
import { ReportStore } from '../reports/queries.js';
import { mountQuality } from '../admin/quality-api.js';
import { AdminStore } from '../admin/store.js';
import { PATHS } from '../endpoints.js';
import { HttpError } from '../errors.js';
import { corsPreflight } from '../http/cors.js';
import type { Handler, HttpServer, Reply } from '../http/server.js';
import { botApiEndpoint } from '../ingest/bot-api.js';
import { webappEndpoint } from '../ingest/webapp.js';
import { TokenBuckets } from '../limits/token-bucket.js';
import { openApiDocument } from '../openapi.js';
import type { Parts } from './wiring.js';

const ROOT_POINTERS = {
  service: 'tg-ingest',
  adminPage: PATHS.admin + '/',
  openapi: PATHS.openapi,
  ingestion: { bot_api: `POST ${PATHS.bot_api[0]}`, webapp: `POST ${PATHS.webapp[0]}` },
  docs: 'docs/api.md in the repository: events, responses, diagnostics',
};

const methodNotAllowed =
  (allow: string): Handler =>
  () => ({ status: 405, headers: { Allow: allow }, body: { error: 'method_not_allowed', message: `Use ${allow}.` } });

/** The ingestion endpoints, on the main listener. */
export function mountIngestion(server: HttpServer, p: Parts): void {
  const { config } = p;
  const closing = () => server.closing;
  const quality = {
    plans: p.plans,
    liveSample: (projectId: string) => p.live.sampleFor(projectId),
    suppressions: p.suppressions,
  };
  const botApi = botApiEndpoint({
    tokens: p.tokens,
    tokenUse: p.tokenUse,
    buckets: new TokenBuckets(p.bucketOptions),
    authFailures: p.authFailures,
    lowPriorityLookups: p.lowPriorityLookups,
    pool: p.pool,
    ...p.commit,
    closing,
    ...quality,
    limits: { maxBytes: config.maxBodyBytes, maxDepth: config.maxJsonDepth, maxProfiles: config.maxProfilesPerRequest },
    onRateLimited: () => p.metrics.limited('bot_api'),
  });
  const webapp = webappEndpoint({
    bots: p.bots,
    sessions: p.sessions,
    buckets: new TokenBuckets(p.bucketOptions),
    authFailures: p.authFailures,
    pool: p.pool,
    ...p.commit,
    ...quality,
    limits: { maxBytes: config.webappMaxBodyBytes, maxDepth: config.maxJsonDepth },
    onRateLimited: () => p.metrics.limited('webapp'),
  });
  // While shutting down, new requests on kept-alive connections are turned away to be retried elsewhere.
  const unlessClosing: Handler = (req, readBody) => {
    if (closing()) throw new HttpError('shutting_down', { retryAfterS: 1 });
    return webapp(req, readBody);
  };
  // Shedding asks first, from the request's head: on bot_api the key's project when it is in memory (see LoadShedder).
  const backlog = { admitted: () => p.shedder.admitted(), answered: () => p.shedder.answered() };
  const shedBotApi = {
    refusal: (header: (name: string) => string) =>
      closing() ? null : p.shedder.refusal(p.tokens.projectOf(header('x-api-key').trim()), true),
    ...backlog,
  };
  const shedWebapp = { refusal: () => (closing() ? null : p.shedder.refusal()), ...backlog };
  for (const path of PATHS.bot_api)
    server.route('post', path, botApi, { shed: shedBotApi }).route('any', path, methodNotAllowed('POST'));
  for (const path of PATHS.webapp) {
    server
      .route('post', path, unlessClosing, { maxBodyBytes: config.webappMaxBodyBytes, shed: shedWebapp })
      .route('options', path, corsPreflight())
      .route('any', path, methodNotAllowed('POST, OPTIONS'));
  }
}

/**
 * The admin page, API, live view and /metrics. `ownListener`: served on ADMIN_PORT, not beside the public endpoints.
 */
export function mountAdministration(server: HttpServer, p: Parts, ownListener: boolean): void {
  // The page first: its routes are more specific than the API's.
  mountAdminPage(server);
  const projects = new AdminStore(p.sql, p.tokenTags);
  mountAdmin(server, projects, { guard: p.guard, stats: (projectId) => p.stats.get(projectId), hooks: p.hooks });
  mountQuality(server, projects, p.quality, {
    guard: p.guard,
    hooks: p.hooks,
    maxJsonDepth: p.config.maxJsonDepth,
    compile: (plan) => p.pool.compilePlan(plan),
    replay: {
      sql: p.sql,
      sink: p.sink,
      quota: p.quota,
      plans: p.plans,
      suppressed: (projectId) => p.suppressions.get(projectId),
      recheck: (items) => p.pool.recheck(items, p.config.maxJsonDepth),
      onReplayed: (r) => p.metrics.replay(r),
    },
  });
  mountReports(server, projects, new ReportStore(p.sql), p.guard);
  mountPrivacy(server, projects, new PrivacyStore(p.sql), { guard: p.guard, hooks: p.hooks, sql: p.sql });
  p.live.mount(server.app, PATHS.adminLive);
  // Beside the public endpoints /metrics needs the admin token (Prometheus sends it as a bearer
  // token); on a listener of its own, reachable only where it is bound, it needs none.
  const metrics: Handler = async () => ({
    status: 200,
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    body: await p.metrics.text(),
  });
  server.route('get', PATHS.metrics, ownListener ? metrics : p.guard(metrics));
}

/** Probes, the OpenAPI document and the fallbacks, on every listener. */
export function mountCommon(server: HttpServer, p: Parts, closing: () => boolean): void {
  const ready = (): Reply => {
    if (closing()) return { status: 503, body: { status: 'shutting_down' }, headers: { 'Retry-After': '1' } };
    const state = p.readiness.state;
    return state === 'ready'
      ? { status: 200, body: { status: 'ready' } }
      : { status: 503, body: { status: state }, headers: { 'Retry-After': '1' } };
  };
  server.route('get', PATHS.openapi, () => ({ status: 200, body: openApiDocument() }));
  // A person who opens the bare address learns where to go.
  server.route('get', PATHS.root, () => ({ status: 200, body: ROOT_POINTERS }));
  server.route('get', PATHS.health, () => ({ status: 200, body: { status: 'ok' } }));
  server.route('get', PATHS.ready, ready);
  server.route('any', '/*', () => ({ status: 404, body: { error: 'not_found', message: 'Not found.' } }));
}
