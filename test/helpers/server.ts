// The real service as a child process on an ephemeral port, as an operator would run it.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * Load shedding out of the way: it is tested where it is the subject (test/faults/slow-database.test.ts, the solo
 * floods), and a burst that tests something else must not turn into a shedding test on a busy CI machine.
 */
export const NO_SHEDDING = { SHED_QUEUE_DELAY_MS: '5000' } as const;
// TEST_SERVICE_MAIN: another build of the service (an older checkout's dist/src/main.js), to show
// that a test fails without the change it covers.
const MAIN = process.env.TEST_SERVICE_MAIN ?? fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));

export interface RunningServer {
  url: string;
  port: number;
  proc: ChildProcess;
  /** Every log line so far, parsed. */
  logs: Record<string, unknown>[];
  /** Raw stdout + stderr. */
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  kill(): Promise<void>;
}

async function waitHealthy(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error('server did not become healthy');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface StartOptions {
  /** Another build of the service (default: this checkout's dist/src/main.js). */
  main?: string;
  cwd?: string;
}

export async function startServer(
  databaseUrl: string,
  env: Record<string, string> = {},
  opts: StartOptions = {},
): Promise<RunningServer> {
  // Above info the "listening" line is not logged: then the port must be given, and /healthz tells.
  const quiet = ['warn', 'error', 'fatal', 'silent'].includes(env.LOG_LEVEL ?? '');
  if (quiet && (env.PORT === undefined || env.PORT === '0')) env = { ...env, PORT: String(await freePort()) };
  const proc = spawn(process.execPath, [opts.main ?? MAIN], {
    cwd: opts.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
      WORKERS: '1',
      LOG_LEVEL: 'info',
      // Reports a tenth of a second behind the commits: tests read them right after sending.
      REPORTS_EVERY_MS: '100',
      // A lake per database: test files run in parallel, each on a database of its own, and a lake belongs to one.
      // With the embedded database (no URL), the default: DATA_DIR/lake.
      ...(databaseUrl === ''
        ? {}
        : { EXPORT_DIR: join(tmpdir(), `tg-lake-${new URL(databaseUrl).pathname.slice(1)}`) }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const output: string[] = [];
  // 'exit' may come before the last lines on stdout and stderr: wait for the pipes too (briefly, in
  // case a child process still holds them).
  const closed = once(proc, 'close');
  const exited = once(proc, 'exit').then(async (r) => {
    await Promise.race([closed, new Promise((res) => setTimeout(res, 2000))]);
    return r;
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output.join('\n')}`)), 30_000);
    if (quiet) {
      waitHealthy(Number(env.PORT), 30_000).then(() => {
        clearTimeout(timer);
        resolve(Number(env.PORT));
      }, reject);
    }
    createInterface({ input: proc.stderr! }).on('line', (line) => output.push(line));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      output.push(line);
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if (typeof entry.port === 'number' && String(entry.msg).startsWith('listening')) {
          clearTimeout(timer);
          resolve(entry.port);
        }
      } catch {
        // not a log line
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output.join('\n')}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    proc,
    logs,
    output,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
    async kill() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
