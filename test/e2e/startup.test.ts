import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, startServer } from '../helpers/server.js';

const MAIN = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/src/admin/cli.js', import.meta.url));

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('start-up', () => {
  it.each([
    ['PORT', 'http'],
    ['WORKERS', '-2'],
    ['INITDATA_PUBLIC_KEYS', 'zz'],
    ['LOG_LEVEL', 'chatty'],
  ])('stops on %s=%s with a message naming it', (name, value) => {
    const r = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, [name]: value },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${name}:`);
  });

  it('the banner suggests a first project only while there is none; GET / points the way', async () => {
    const own = await createTestDatabase();
    try {
      const banner = async () => {
        const s = await startServer(own.url);
        const until = Date.now() + 10_000;
        while (!s.output.join('\n').includes('all commands') && Date.now() < until)
          await new Promise((r) => setTimeout(r, 50));
        const text = s.output.join('\n');
        const root = await call(`${s.url}/`);
        return { s, text, root };
      };
      const first = await banner();
      expect(first.text).toMatch(/first project\s+npm run -s admin -- project create/);
      expect(first.root.body).toMatchObject({ adminPage: '/admin/', openapi: '/openapi.json' });
      await provision(first.s.url);
      await first.s.stop();
      const second = await banner();
      expect(second.text).not.toContain('first project');
      expect(second.text).toMatch(/projects\s+npm run -s admin -- project list\s+\(1\)/);
      await second.s.stop();
    } finally {
      await own.drop();
    }
  });

  it('refuses a port that another server already holds instead of sharing it', async () => {
    const first = await startServer(db.url);
    try {
      const second = spawnSync(process.execPath, [MAIN], {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: db.url,
          HOST: '127.0.0.1',
          PORT: String(first.port),
          ADMIN_TOKEN,
          WORKERS: '1',
        },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(second.status).toBe(1);
      expect(second.stderr).toContain(`cannot listen on 127.0.0.1:${first.port}`);
      expect((await call(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  it('exits cleanly on SIGTERM', async () => {
    const s = await startServer(db.url);
    const code = await s.stop('SIGTERM');
    expect(code, s.output.join('\n')).toBe(0);
    expect(s.logs.some((l) => l.msg === 'stopped')).toBe(true);
  });
});

describe('embedded PostgreSQL (no DATABASE_URL)', () => {
  it('starts its own database under DATA_DIR, generates the admin token, and keeps data across restarts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-ingest-data-'));
    try {
      const first = await startServer('', { DATA_DIR: dataDir, ADMIN_TOKEN: '' });
      const tokenFile = join(dataDir, 'admin-token');
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const adminToken = readFileSync(tokenFile, 'utf8').trim();
      expect(first.logs.some((l) => l.path === tokenFile)).toBe(true);
      expect(first.output.join('\n')).not.toContain(adminToken);
      // A developer's machine: a development initData key, private, trusted, and the banner says how to use it.
      expect(statSync(join(dataDir, 'initdata-dev-key.pem')).mode & 0o777).toBe(0o600);
      await expect.poll(() => first.output.join('\n')).toContain('initdata <botId>');
      expect((await call(`${first.url}/readyz`)).status).toBe(200);
      const created = await call(`${first.url}/admin/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}` },
        body: { name: 'persisted' },
      });
      expect(created.status).toBe(201);
      expect(await first.stop()).toBe(0);

      const second = await startServer('', { DATA_DIR: dataDir, ADMIN_TOKEN: '' });
      try {
        const got = await call(`${second.url}/admin/projects/${created.body.projectId}`, {
          headers: { authorization: `Bearer ${adminToken}` },
        });
        expect(got.status).toBe(200);
        expect(got.body.name).toBe('persisted');
      } finally {
        expect(await second.stop()).toBe(0);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('admin CLI', () => {
  it('provisions a project, bot and token through the admin API', async () => {
    const s = await startServer(db.url);
    try {
      const env = { PATH: process.env.PATH, ADMIN_URL: s.url, ADMIN_TOKEN };
      const cli = (...args: string[]) => {
        const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 20_000 });
        return { status: r.status, out: r.stdout === '' ? null : JSON.parse(r.stdout), err: r.stderr };
      };
      const p = cli('project', 'create', 'From CLI', '--allowance', '1000');
      expect(p.status).toBe(0);
      const b = cli('bot', 'create', '--project', p.out.projectId, '--messenger-bot-id', '4242');
      expect(b.status).toBe(0);
      expect(b.out.bot.messengerBotId).toBe(4242);
      const off = cli('bot', 'update', b.out.botId, '--api', 'off');
      expect(off.out.apiIngest).toBe(false);
      cli('bot', 'update', b.out.botId, '--api', 'on');
      const t = cli('token', 'create', b.out.botId);
      expect(t.out.token).toMatch(/^tgk_/);
      expect((await postBotApi(s.url, t.out.token, { events: [serverEvent()] })).status).toBe(202);
      expect(cli('project', 'usage', p.out.projectId).out).toMatchObject({ eventAllowance: 1000, eventsBilled: 1 });
      expect(cli('project', 'set-allowance', p.out.projectId, 'unlimited').out.eventAllowance).toBeNull();
      expect(cli('token', 'revoke', t.out.tokenId).status).toBe(0);
      expect((await postBotApi(s.url, t.out.token, { events: [serverEvent()] })).status).toBe(401);
      const bad = cli('project', 'explode');
      expect(bad.status).toBe(2);
      expect(bad.err).toContain('usage:');
      const missing = cli('project', 'show', '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b');
      expect(missing.status).toBe(1);
      expect(missing.err).toContain('not_found');
    } finally {
      await s.stop();
    }
  });

  it('reads the admin token from DATA_DIR by default', async () => {
    const s = await startServer(db.url);
    try {
      const p = await provision(s.url);
      expect((await admin(s.url, 'GET', `/admin/projects/${p.projectId}`)).status).toBe(200);
      const dataDir = mkdtempSync(join(tmpdir(), 'tg-ingest-cli-'));
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(dataDir, 'admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
      const r = spawnSync(process.execPath, [CLI, 'project', 'show', p.projectId], {
        env: { PATH: process.env.PATH, ADMIN_URL: s.url, DATA_DIR: dataDir },
        encoding: 'utf8',
      });
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout).projectId).toBe(p.projectId);
      rmSync(dataDir, { recursive: true, force: true });
    } finally {
      await s.stop();
    }
  });
});
