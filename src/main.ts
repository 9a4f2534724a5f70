// Entry point: configuration, database (embedded unless DATABASE_URL), the service, signals.
import { loadAdminToken } from './admin/admin-token.js';
import { type App, startApp } from './app.js';
import { ConfigError, readConfig } from './config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.js';
import { createLogger } from './log.js';

async function main(): Promise<void> {
  let config;
  try {
    config = readConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tg-ingest: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);

  let embedded: EmbeddedPostgres | null = null;
  let app: App | null = null;
  let stopping = false;
  // Registered before anything starts, so a signal during start-up still shuts down in order.
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    Promise.resolve(app?.shutdown())
      .then(() => embedded?.stop())
      .then(() => {
        log.info('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  let databaseUrl = config.databaseUrl;
  if (databaseUrl === null) {
    embedded = await startEmbeddedPostgres({ dir: config.dataDir, log: (msg) => log.info(msg) });
    databaseUrl = embedded.url;
  }
  const admin = loadAdminToken(config.adminToken, config.dataDir);
  if (admin.path !== null) log.info({ path: admin.path, created: admin.created }, `admin token is in ${admin.path}`);
  if (stopping) return;

  app = await startApp({ config, databaseUrl, adminToken: admin.token, log });
  if (stopping) {
    await app.shutdown();
    return;
  }
  log.info({ host: config.host, port: app.port, workers: config.workers, embeddedDatabase: embedded !== null }, `listening on http://${config.host}:${app.port}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`tg-ingest: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
