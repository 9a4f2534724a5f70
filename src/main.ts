// Entry point: configuration, DATA_DIR, the database (embedded unless DATABASE_URL), the service,
// signals, and what a newcomer should do next.
import { loadAdminToken } from './admin/admin-token.js';
import { type App, startApp } from './app/app.js';
import { type Config, ConfigError, readConfig } from './config/config.js';
import { loadDevKey } from './auth/dev-key.js';
import { type DataDirLock, lockDataDir, writeRuntime } from './config/data-dir.js';
import { EmbeddedPostgres } from './db/embedded.js';
import { createLogger } from './base/log.js';

/** The address a local client uses to reach a listener bound to `host`. */
function localUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/** Printed once the service answers: where to click, where the token is, what to type next. */
function firstSteps(
  config: Readonly<Config>,
  adminUrl: string,
  tokenPath: string | null,
  embedded: boolean,
  projects: number,
  devKeyPath: string | null,
): string {
  const defaultDir = config.dataDir === readConfig({}).dataDir;
  // -s: npm prints nothing of its own, so what the CLI prints (JSON) can be piped as it is.
  const cli = `${defaultDir ? '' : `DATA_DIR=${config.dataDir} `}npm run -s admin --`;
  return [
    '',
    `tg-ingest is ready.`,
    `  admin page     ${adminUrl}/admin/`,
    `  admin token    ${tokenPath === null ? 'the ADMIN_TOKEN you set' : `cat ${tokenPath}`}`,
    projects === 0
      ? `  first project  ${cli} project create "My shop"`
      : `  projects       ${cli} project list   (${projects})`,
    ...(devKeyPath === null
      ? []
      : [`  try webapp     ${cli} initdata <botId>   (signed with the development key ${devKeyPath}, trusted)`]),
    `  all commands   ${cli} help`,
    ...(embedded ? [`  database       psql "$(${cli} db)"`] : []),
    `  API reference  docs/api.md (events, responses, diagnostics); ${adminUrl}/openapi.json`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  let config: ReturnType<typeof readConfig>;
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

  // DATA_DIR is this process's alone whenever it keeps state there (the embedded database, a
  // generated admin token): a second instance on it would share, and stop, the first one's database.
  const usesDataDir = config.databaseUrl === null || config.adminToken === null;
  let lock: DataDirLock | null = null;
  if (usesDataDir) {
    try {
      lock = lockDataDir(config.dataDir);
    } catch (err) {
      process.stderr.write(`tg-ingest: ${(err as Error).message}\n`);
      process.exit(1);
    }
  }

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
        lock?.release();
        log.info('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  // A promise no code awaited failed: a bug, logged. Node would end the process, and with it every
  // request in flight, for what one request's data caused.
  process.on('unhandledRejection', (err: unknown) =>
    log.error({ err }, 'unhandled rejection (a bug; the service goes on)'),
  );
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  let databaseUrl = config.databaseUrl;
  if (databaseUrl === null) {
    embedded = await EmbeddedPostgres.start({
      dir: config.dataDir,
      log: { info: (msg) => log.info(msg), error: (msg) => log.error(msg) },
    });
    databaseUrl = embedded.serviceUrl;
  }
  const admin = loadAdminToken(config.adminToken, config.dataDir);
  if (admin.path !== null) log.info({ path: admin.path, created: admin.created }, `admin token is in ${admin.path}`);
  if (stopping) return;

  // The development key is trusted beside the messenger's: initData it signs passes as a real session would.
  const devKey = config.initDataDevKeyFile === null ? null : loadDevKey(config.initDataDevKeyFile, true);
  if (devKey !== null) {
    log.warn(
      { path: devKey.path, publicKey: devKey.publicKeyHex, created: devKey.created },
      'trusting a development initData key',
    );
    config = Object.freeze({ ...config, initDataPublicKeys: [...config.initDataPublicKeys, devKey.publicKeyHex] });
  }

  app = await startApp({ config, databaseUrl, adminToken: admin.token, log });
  if (stopping) {
    await app.shutdown();
    return;
  }
  const adminUrl =
    app.adminPort === null ? localUrl(config.host, app.port) : localUrl(config.adminHost!, app.adminPort);
  if (lock !== null) writeRuntime(config.dataDir, { pid: process.pid, adminUrl, url: localUrl(config.host, app.port) });
  log.info(
    {
      host: config.host,
      port: app.port,
      adminPort: app.adminPort,
      workers: config.workers,
      embeddedDatabase: embedded !== null,
    },
    `listening on http://${config.host}:${app.port}`,
  );
  if (log.isLevelEnabled('info'))
    process.stderr.write(
      firstSteps(config, adminUrl, admin.path, embedded !== null, app.projects, devKey?.path ?? null),
    );
}

main().catch((err: unknown) => {
  process.stderr.write(`tg-ingest: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
