// A backup of the embedded database taken while events stream in, restored into a fresh DATA_DIR: the service there
// opens a consistent copy (every event acknowledged before the backup began, nothing that was never acknowledged,
// the usage ledger equal to the events), with the same admin token and API tokens.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { call, postBotApi, serverEvent } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const CLI = fileURLToPath(new URL('../../dist/src/admin/cli.js', import.meta.url));

function cli(dataDir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe('backup and restore of the embedded database', () => {
  it('restores, into a fresh DATA_DIR, what was committed when the backup stopped, while ingestion went on', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tg-ingest-backup-'));
    const [first, second, saved] = ['first', 'second', 'saved'].map((d) => join(root, d)) as [string, string, string];
    try {
      const a = await startServer('', { DATA_DIR: first, ADMIN_TOKEN: '' });
      const adminToken = readFileSync(join(first, 'admin-token'), 'utf8').trim();
      const auth = { authorization: `Bearer ${adminToken}` };
      const { projectId } = (
        await call(`${a.url}/admin/projects`, { method: 'POST', headers: auth, body: { name: 'b' } })
      ).body;
      const { botId } = (await call(`${a.url}/admin/bots`, { method: 'POST', headers: auth, body: { projectId } }))
        .body;
      const { token } = (await call(`${a.url}/admin/bots/${botId}/tokens`, { method: 'POST', headers: auth })).body;

      // Batches of 20 events, one after another, acknowledged or not, until told to stop.
      const acked: string[] = [];
      let sending = true;
      const sender = (async () => {
        while (sending) {
          const events = Array.from({ length: 20 }, (_, i) => serverEvent({ platformUserId: String(1 + i) }));
          const r = await postBotApi(a.url, token, { events });
          if (r.status === 202) acked.push(...events.map((e) => e.eventId as string));
        }
      })();
      await expect.poll(() => acked.length, { timeout: 20_000 }).toBeGreaterThan(2000);
      const before = new Set(acked);
      expect(cli(first, 'backup', join(first, 'inside')).err).toContain('is inside DATA_DIR');
      const made = cli(first, 'backup', saved);
      expect(made.status, made.err).toBe(0);
      expect(JSON.parse(made.out)).toMatchObject({ backup: saved, postgresVersion: '18' });
      // Ingestion went on while the backup ran, and after.
      const atStop = acked.length;
      await expect.poll(() => acked.length, { timeout: 20_000 }).toBeGreaterThan(atStop + 200);
      sending = false;
      await sender;
      expect(await a.stop()).toBe(0);

      // Into a DATA_DIR that holds a database already: refused, nothing touched.
      const over = cli(first, 'restore', saved);
      expect([over.status, over.err]).toEqual([1, expect.stringContaining('is not empty')]);
      // A backup cut short (no manifest) is no backup.
      const cut = join(root, 'cut');
      cpSync(saved, cut, { recursive: true });
      rmSync(join(cut, 'backup.json'));
      expect(cli(second, 'restore', cut).err).toContain('holds no finished backup');
      expect(existsSync(join(second, 'postgres'))).toBe(false);
      // A target that exists, or inside DATA_DIR: refused before anything starts.
      expect(cli(first, 'backup', saved).err).toContain('exists: a backup goes into a new directory');

      // A restore cut short (its cluster still beside its place): no service starts on it.
      const halfway = join(root, 'halfway');
      mkdirSync(join(halfway, 'postgres.restoring'), { recursive: true });
      await expect(startServer('', { DATA_DIR: halfway, ADMIN_TOKEN: '' })).rejects.toThrow(
        /restore into .* was cut short/,
      );

      const restored = cli(second, 'restore', saved);
      expect(restored.status, restored.err).toBe(0);
      const b = await startServer('', { DATA_DIR: second, ADMIN_TOKEN: '' });
      try {
        expect(readFileSync(join(second, 'admin-token'), 'utf8').trim()).toBe(adminToken);
        const sql = connect(cli(second, 'db').out.trim(), { max: 1, name: 'tg-ingest tests' });
        try {
          const ids = new Set((await sql<{ id: string }[]>`SELECT event_id::text AS id FROM events`).map((r) => r.id));
          const all = new Set(acked);
          expect([...before].filter((id) => !ids.has(id))).toEqual([]);
          expect([...ids].filter((id) => !all.has(id))).toEqual([]);
          // Some of what was acknowledged while the backup ran, none of what came after it.
          expect(ids.size).toBeGreaterThanOrEqual(before.size);
          expect(ids.size).toBeLessThan(acked.length);
          const usage = await call(`${b.url}/admin/projects/${projectId}/usage`, { headers: auth });
          expect(usage.body.eventsStored).toBe(ids.size);
        } finally {
          await sql.end({ timeout: 1 });
        }
        // The restored service takes the same API token.
        expect((await postBotApi(b.url, token, { events: [serverEvent()] })).status).toBe(202);
      } finally {
        expect(await b.stop()).toBe(0);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);
});
