// What every benchmark stands on: a PostgreSQL (embedded unless DATABASE_URL), a fresh database
// per scenario, and the real service as its own process.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connect, type Sql } from '../../src/db/connect.js';
import { EmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';

export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
// BENCH_SERVICE_MAIN: another build of the service (an older checkout's dist/src/main.js), to compare builds in one run.
const MAIN = process.env.BENCH_SERVICE_MAIN ?? fileURLToPath(new URL('../../src/main.js', import.meta.url));
export const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');

export interface Postgres {
  url: string;
  version: string;
  stop(): Promise<void>;
}

export async function postgres(): Promise<Postgres> {
  const given = process.env.DATABASE_URL;
  let url: string;
  let stop = async (): Promise<void> => {};
  if (given) url = given;
  else {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-bench-'));
    const pg = await EmbeddedPostgres.start({ dir });
    url = pg.superuserUrl;
    stop = async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const sql = connect(url, { max: 1, name: 'bench' });
  const [{ v }] = await sql<{ v: string }[]>`SELECT current_setting('server_version') AS v`;
  await sql.end();
  return { url, version: v!, stop };
}

export interface Database {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

export async function freshDatabase(serverUrl: string): Promise<Database> {
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = connect(serverUrl, { max: 1, name: 'bench' });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  const sql = connect(u.toString(), { max: 2, name: 'bench' });
  await migrate(sql);
  return {
    url: u.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 1 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export interface Service {
  url: string;
  pid: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export async function startService(databaseUrl: string, env: Record<string, string> = {}): Promise<Service> {
  // BENCH_PROFILE_DIR: CPU profiles of the service (main thread and workers) for the window measured.
  const profile = process.env.BENCH_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
    : [];
  const proc = spawn(process.execPath, [...NODE_FLAGS, ...profile, MAIN], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      // Benchmarks measure throughput, not the per-token limits.
      RATE_LIMIT_PER_MIN: '100000000',
      RATE_LIMIT_BURST: '100000000',
      // The lake off but where a scenario measures it (b-large-lake, funnel-50m): at its defaults it would export
      // once a minute, outside most windows measured, into one directory shared by every fresh database.
      EXPORT_DIR: 'none',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`service exited with ${code}`)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      try {
        const e = JSON.parse(line) as { port?: number; msg?: string };
        if (typeof e.port === 'number' && e.msg?.startsWith('listening')) resolve(e.port);
        else if ((e as { level?: number }).level !== undefined && (e as { level: number }).level >= 40)
          process.stderr.write(`${line}\n`);
      } catch {
        process.stderr.write(`${line}\n`);
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid!,
    proc,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    },
  };
}

export async function adminCall<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function provision(
  base: string,
  messengerBotId = 8000001,
): Promise<{ projectId: string; botId: string; token: string }> {
  const p = await adminCall<{ projectId: string }>(base, 'POST', '/admin/projects', { name: 'bench' });
  const b = await adminCall<{ botId: string }>(base, 'POST', '/admin/bots', { projectId: p.projectId, messengerBotId });
  const t = await adminCall<{ token: string }>(base, 'POST', `/admin/bots/${b.botId}/tokens`);
  return { projectId: p.projectId, botId: b.botId, token: t.token };
}

export function machineLine(pgVersion: string): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `machine: ${availableParallelism()} cores (${cpu}), Node ${process.version}, PostgreSQL ${pgVersion}`;
}

/** Metric values from the service's /metrics, by metric name and label set. */
export async function scrape(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

export async function tableRows(sql: Sql): Promise<number> {
  const [{ n }] = await sql<{ n: string }[]>`SELECT count(*) AS n FROM events`;
  return Number(n);
}
