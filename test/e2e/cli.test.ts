// The admin CLI over the whole admin API (tracking plan, quarantine, stats, tables), the development initData key
// it signs with, and when each token was last used.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

const CLI = fileURLToPath(new URL('../../dist/src/admin/cli.js', import.meta.url));

let db: TestDatabase;
let srv: RunningServer;
let dir: string;
const keyFile = () => join(dir, 'keys', 'dev.pem');

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'tg-ingest-cli-'));
  srv = await startServer(db.url, { INITDATA_DEV_KEY_FILE: keyFile(), DATA_DIR: join(dir, 'data') });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string; json: any } {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, ADMIN_URL: srv.url, ADMIN_TOKEN, INITDATA_DEV_KEY_FILE: keyFile() },
    encoding: 'utf8',
    timeout: 20_000,
  });
  let json: unknown = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    // a table, or initData
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, json };
}

describe('the CLI', () => {
  it('sets, reads and deletes a tracking plan from a file', async () => {
    const p = await provision(srv.url);
    const file = join(dir, 'plan.json');
    writeFileSync(
      file,
      JSON.stringify({ mode: 'block', unplannedEvents: 'allow', events: { checkout: { type: 'object' } } }),
    );
    const put = cli('plan', 'put', p.projectId, file);
    expect(put.status, put.stderr).toBe(0);
    expect(cli('plan', 'get', p.projectId).json).toMatchObject({ mode: 'block', events: { checkout: {} } });
    expect(cli('plan', 'delete', p.projectId).status).toBe(0);
    expect(cli('plan', 'get', p.projectId).status).toBe(1);
    const missing = cli('plan', 'put', p.projectId, join(dir, 'nope.json'));
    expect([missing.status, missing.stderr]).toEqual([2, expect.stringContaining('cannot read')]);
  });

  it('lists, summarises, dry-runs, replays and deletes the quarantine, in JSON or as a table', async () => {
    const p = await provision(srv.url);
    const bad = [serverEvent({ eventDate: 'not a date' }), serverEvent({ eventDate: 'yesterday' })];
    expect((await postBotApi(srv.url, p.token, { events: bad })).status).toBe(400);
    const list = cli('quarantine', 'list', p.projectId, '--limit', '1');
    expect(list.json.items).toHaveLength(1);
    expect(list.json.next).not.toBeNull();
    const summary = cli('quarantine', 'summary', p.projectId);
    expect(summary.json).toEqual([{ code: 'event_date_invalid', count: 2 }]);
    const table = cli('quarantine', 'summary', p.projectId, '--table');
    expect(table.stdout.split('\n').slice(0, 3)).toEqual([
      'code                count',
      '------------------  -----',
      'event_date_invalid  2',
    ]);
    expect(cli('quarantine', 'replay', p.projectId, '--dry-run').json).toMatchObject({ replayed: 2, stillRejected: 2 });
    expect(cli('quarantine', 'delete', p.projectId, '--code', 'event_date_invalid').status).toBe(0);
    expect(cli('quarantine', 'summary', p.projectId).json).toEqual([]);
    expect(cli('quarantine', 'list', p.projectId, '--table').stdout).toBe('(none)\nnext: \n');
  });

  it('shows stats, and a token list with when each token was last used', async () => {
    const p = await provision(srv.url);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent()] })).status).toBe(202);
    expect(cli('stats', p.projectId).json.totals).toMatchObject({ accepted: 1 });
    const unused = (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`)).body.tokenId;
    const before = Date.now();
    // Written once a minute, and at shutdown: a graceful restart shows it.
    await srv.stop();
    srv = await startServer(db.url, { INITDATA_DEV_KEY_FILE: keyFile(), DATA_DIR: join(dir, 'data') });
    const tokens = cli('token', 'list', p.botId).json as { tokenId: string; lastUsedAt: string | null }[];
    const used = tokens.find((t) => t.tokenId === p.tokenId)!;
    expect(Date.parse(used.lastUsedAt!)).toBeLessThanOrEqual(before);
    expect(Date.parse(used.lastUsedAt!)).toBeGreaterThan(before - 60_000);
    expect(tokens.find((t) => t.tokenId === unused)!.lastUsedAt).toBeNull();
    const table = cli('token', 'list', p.botId, '--table').stdout;
    expect(table.split('\n')[0]).toMatch(
      /^tokenId\s+botId\s+hint\s+createdAt\s+revokedAt\s+lastUsedAt\s+rateLimitPerMin\s+rateLimitBurst$/,
    );
    // Its own rate limit: set, then back to the service's.
    expect(cli('token', 'set-limit', p.tokenId, '6000', '--burst', '900').json).toMatchObject({
      tokenId: p.tokenId,
      rateLimitPerMin: 6000,
      rateLimitBurst: 900,
    });
    const limited = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    expect(limited.headers.get('ratelimit-limit')).toBe('900');
    expect(cli('token', 'set-limit', p.tokenId, 'default', '--burst', 'default').json).toMatchObject({
      rateLimitPerMin: null,
      rateLimitBurst: null,
    });
  });

  it('prints the daily, revenue and sessions reports for a range, as JSON or a table', async () => {
    const p = await provision(srv.url);
    expect(
      (await postBotApi(srv.url, p.token, { events: [serverEvent({ eventDate: '2026-11-02T10:00:00Z' })] })).status,
    ).toBe(202);
    const args = ['report', 'daily', p.projectId, '--from', '2026-11-01', '--to', '2026-11-03'];
    await expect.poll(() => cli(...args).json?.[1]?.events, { timeout: 10_000 }).toBe(1);
    expect(cli(...args).json.map((d: { day: string }) => d.day)).toEqual(['2026-11-01', '2026-11-02', '2026-11-03']);
    expect(cli(...args, '--table').stdout.split('\n')[0]).toMatch(
      /^day\s+events\s+eventsByType\s+activeUsers\s+newUsers$/,
    );
    expect(cli('report', 'revenue', p.projectId, '--by', 'day').json).toEqual([]);
    expect(cli('report', 'sessions', p.projectId, '--from', '2026-11-01', '--to', '2026-11-02').json).toEqual(
      ['2026-11-01', '2026-11-02'].map((day) => ({
        day,
        sessions: 0,
        users: 0,
        medianDurationS: null,
        p90DurationS: null,
        sessionsPerUser: 0,
        byPlatform: {},
      })),
    );
    expect(cli('report', 'daily', p.projectId, '--from', 'yesterday').status).toBe(1);
  });

  it("exports a user's data as NDJSON, erases it with a suppression, and lifts the suppression", async () => {
    const p = await provision(srv.url);
    expect((await postBotApi(srv.url, p.token, { events: [serverEvent({ platformUserId: '6001' })] })).status).toBe(
      202,
    );
    const exported = cli('user', 'export', p.projectId, '6001');
    expect(exported.status).toBe(0);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // The report tables' lines (campaign, active_day) come once the reports have folded the event in.
    expect(
      lines.map((l: { type: string }) => l.type).filter((t: string) => t !== 'campaign' && t !== 'active_day'),
    ).toEqual(['profile', 'event', 'end']);
    const erased = cli('user', 'erase', p.projectId, '6001', '--suppress');
    expect(erased.json).toMatchObject({ status: 'pending', userIds: ['6001'], suppress: true });
    await expect
      .poll(() => cli('user', 'erasure', p.projectId, erased.json.erasureId).json?.status, { timeout: 30_000 })
      .toBe('done');
    expect(cli('user', 'erasure', p.projectId, erased.json.erasureId).json.deleted).toEqual({
      events: 1,
      users: 1,
      quarantine: 0,
      lakeFiles: expect.any(Number),
    });
    expect(
      cli('user', 'export', p.projectId, '6001')
        .stdout.trim()
        .split('\n')
        .map((l) => JSON.parse(l).type),
    ).toEqual(['suppression', 'end']);
    expect(cli('user', 'unsuppress', p.projectId, '6001').status).toBe(0);
    expect(cli('user', 'unsuppress', p.projectId, '6001').status).toBe(1);
    expect(cli('user', 'erase', p.projectId).status).toBe(2);
  });

  it('refuses an unknown command and a flag without its value with the usage', () => {
    expect(cli('quarantine', 'explode').status).toBe(2);
    const r = cli('quarantine', 'list', 'x', '--limit');
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('--limit needs a value')]);
  });
});

describe('the development initData key', () => {
  it('is made where INITDATA_DEV_KEY_FILE says, private, and named on start', () => {
    expect(statSync(keyFile()).mode & 0o777).toBe(0o600);
    expect(srv.logs.some((l) => l.msg === 'trusting a development initData key' && l.path === keyFile())).toBe(true);
  });

  it('signs initData the webapp endpoint accepts, for the user and start parameter asked', async () => {
    const p = await provision(srv.url);
    const initData = cli('initdata', p.botId, '--user', '4242', '--start-param', 'spring');
    expect(initData.status, initData.stderr).toBe(0);
    const fields = new URLSearchParams(initData.stdout.trim());
    expect(fields.get('start_param')).toBe('spring');
    const r = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: {
        botId: p.botId,
        auth: { initData: initData.stdout.trim() },
        events: [serverEvent({ platformUserId: undefined, eventOrigin: undefined })],
      },
    });
    expect(r.status, r.text).toBe(202);
    const [row] = await db.sql<
      { u: string }[]
    >`SELECT platform_user_id::text AS u FROM events WHERE project_id = ${p.projectId}`;
    expect(row!.u).toBe('4242');
  });

  it('is not made with DATABASE_URL unless asked, and initData it signs is then refused', async () => {
    const dataDir = join(dir, 'plain');
    const plain = await startServer(db.url, { DATA_DIR: dataDir });
    try {
      expect(existsSync(join(dataDir, 'initdata-dev-key.pem'))).toBe(false);
      const p = await provision(plain.url);
      const signed = spawnSync(process.execPath, [CLI, 'initdata', p.botId], {
        env: { PATH: process.env.PATH, ADMIN_URL: plain.url, ADMIN_TOKEN, INITDATA_DEV_KEY_FILE: keyFile() },
        encoding: 'utf8',
      }).stdout.trim();
      const r = await call(`${plain.url}/tg/webapp`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: { botId: p.botId, auth: { initData: signed }, events: [serverEvent()] },
      });
      expect([r.status, r.body.error]).toEqual([401, 'initdata_signature_invalid']);
      expect(readFileSync(keyFile(), 'utf8')).toContain('PRIVATE KEY');
    } finally {
      await plain.stop();
    }
  });
});
