// Composition of the service: the database, the parts wired together (app/wiring.ts), the
// listeners and their routes (app/routes.ts), and the order of shutdown.
import { openDatabase } from './app/database.js';
import { mountAdministration, mountCommon, mountIngestion } from './app/routes.js';
import { wire } from './app/wiring.js';
import type { Config } from './config.js';
import { PATHS, routeGroup } from './endpoints.js';
import { corsHeaders } from './http/cors.js';
import { HttpServer, type Reply, type Request } from './http/server.js';
import type { Logger } from './log.js';

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

export async function startApp({ config, databaseUrl, adminToken, log }: AppOptions): Promise<App> {
  const db = await openDatabase(databaseUrl, config, log);
  const parts = await wire(config, db.sql, databaseUrl, adminToken, log);

  const onReply = (req: Request, reply: Reply, ms: number) => {
    const group = routeGroup(req.path);
    parts.metrics.request(group, reply.status, ms / 1000);
    if (reply.status === 429 && (reply.body as { error?: string } | undefined)?.error === 'auth_rate_limited')
      parts.metrics.authLimitedOn(group);
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
    bodyBudget: parts.bodyBudget,
    tarpit: parts.tarpit,
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
  const closing = () => server.closing;

  mountIngestion(server, parts);
  mountAdministration(adminServer, parts, adminServer !== server);
  for (const s of servers) mountCommon(s, parts, closing);

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
        parts.stop();
        db.stop();
        const deadline = new Promise((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
        await Promise.race([Promise.all(servers.map((s) => s.drained())), deadline]);
        await parts.sink.close();
        await parts.tokenUse.stop();
        await parts.reports.stop();
        await parts.eraser.stop();
        await parts.pool.close();
        await db.sql.end({ timeout: 5 });
      })();
      return shuttingDown;
    },
  };
}
