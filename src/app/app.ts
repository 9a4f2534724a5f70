// The composition of the service: the database, the shared parts (shared.ts), the wings in order, the listeners that
// serve their routes, and the order of shutdown. A new feature is a new wing in WINGS.
import type { Config } from '../config/config.js';
import { PATHS, routeGroup } from '../base/endpoints.js';
import { corsHeaders } from '../http/cors.js';
import { register, type Route } from '../http/route.js';
import { HttpServer, type Reply, type Request } from '../http/server.js';
import type { Logger } from '../base/log.js';
import { openApiDocument } from '../openapi/document.js';
import { adminWing } from '../wings/admin/wing.js';
import { ingestionWing } from '../wings/ingestion/wing.js';
import { lakeWing } from '../wings/lake/wing.js';
import { operationsWing } from '../wings/operations/wing.js';
import { privacyWing } from '../wings/privacy/wing.js';
import { qualityWing } from '../wings/quality/wing.js';
import { reportsWing } from '../wings/reports/wing.js';
import { sdkWing } from '../wings/sdk/wing.js';
import type { Shared, Wing } from '../wings/wing.js';
import { openDatabase } from './database.js';
import { buildShared } from './shared.js';

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
  /** Projects that existed at start (the banner tells a newcomer what to do first). */
  projects: number;
  /** Stops accepting, answers what is in flight, commits what is queued, closes pool and database. */
  shutdown(): Promise<void>;
}

/**
 * The wings, in the order their routes are registered (the admin page before the admin API; operations, with the 404
 * of every other path, last) and started; they stop in reverse order, so ingestion, which records when tokens were
 * used, stops before the background jobs that may take a while to end (a fold, an erasure's step).
 */
function wings(s: Shared, closing: () => boolean): Wing[] {
  // The OpenAPI document, made once from every wing's routes as soon as they are all built: a route or schema it cannot
  // describe stops the start, and each request for it is answered the same bytes.
  let document = '';
  const built: Wing[] = [
    adminWing(s),
    qualityWing(s),
    reportsWing(s),
    lakeWing(s),
    privacyWing(s),
    ingestionWing(s, closing),
    sdkWing(),
    operationsWing(s, closing, () => document),
  ];
  document = JSON.stringify(openApiDocument(allRoutes(built), allSchemas(built)));
  return built;
}

const allRoutes = (built: readonly Wing[]): Route[] => built.flatMap((w) => w.routes);

function allSchemas(built: readonly Wing[]): Record<string, Record<string, unknown>> {
  const all: Record<string, Record<string, unknown>> = {};
  for (const w of built)
    for (const [name, schema] of Object.entries(w.schemas ?? {})) {
      if (name in all) throw new Error(`the schema ${name} is declared twice (wing ${w.name})`);
      all[name] = schema;
    }
  return all;
}

export async function startApp({ config, databaseUrl, adminToken, log }: AppOptions): Promise<App> {
  const db = await openDatabase(databaseUrl, config, log);
  const shared = await buildShared(config, db.sql, databaseUrl, adminToken, log);

  const onReply = (req: Request, reply: Reply, ms: number) => {
    const group = routeGroup(req.path);
    shared.metrics.request(group, reply.status, ms / 1000);
    if (reply.status === 429 && (reply.body as { error?: string } | undefined)?.error === 'auth_rate_limited')
      shared.metrics.authLimitedOn(group);
    if (log.isLevelEnabled('debug'))
      log.debug(
        {
          requestId: req.requestId,
          method: req.method,
          path: req.path,
          status: reply.status,
          ms: Math.round(ms * 10) / 10,
        },
        'request',
      );
  };
  const serverOptions = {
    maxBodyBytes: config.maxBodyBytes,
    bodyBudget: shared.bodyBudget,
    tarpit: shared.tarpit,
    trustProxy: config.trustProxy,
    onError: (req: Request, err: unknown) =>
      log.error({ requestId: req.requestId, path: req.path, err }, 'request failed'),
    onReply,
  };
  const webappPaths = new Set<string>(PATHS.webapp);
  const cors = { origins: config.corsAllowOrigins };
  const server = new HttpServer({
    ...serverOptions,
    baseHeaders: (req) => (webappPaths.has(req.path) ? corsHeaders(req, cors) : undefined),
  });
  // /admin and /metrics on a listener of their own when ADMIN_PORT is set; on the main one otherwise.
  const adminServer = config.adminPort === null ? server : new HttpServer(serverOptions);
  const servers = adminServer === server ? [server] : [server, adminServer];

  const built = wings(shared, () => server.closing);
  const routes = allRoutes(built);
  if (adminServer === server) register(server, routes, ['public', 'admin', 'every']);
  else {
    register(server, routes, ['public', 'every']);
    register(adminServer, routes, ['admin', 'every']);
  }
  for (const w of built) w.start?.();

  const [{ n: projects }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM projects`;
  const port = await server.listen(config.host, config.port);
  const adminPort = adminServer === server ? null : await adminServer.listen(config.adminHost!, config.adminPort!);

  let shuttingDown: Promise<void> | null = null;
  return {
    port,
    adminPort,
    projects: projects ?? 0,
    shutdown() {
      shuttingDown ??= (async () => {
        for (const s of servers) s.stopListening();
        shared.stop();
        db.stop();
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise((r) => (timer = setTimeout(r, config.shutdownTimeoutMs)));
        await Promise.race([Promise.all(servers.map((s) => s.drained())), deadline]);
        clearTimeout(timer);
        await shared.sink.close();
        for (const w of [...built].reverse()) await w.stop?.();
        await shared.pool.close();
        await db.sql.end({ timeout: 5 });
      })();
      return shuttingDown;
    },
  };
}
