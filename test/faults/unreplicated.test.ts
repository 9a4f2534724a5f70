// A commit whose wait for the synchronous standby is cancelled comes back as COMMIT with a warning: committed on the
// primary, perhaps nowhere else. A failover would lose it, so it is not a 202: the writer answers 503, and the
// client's retry is deduplicated against it while the primary lives.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/connect.js';
import { EmbeddedPostgres } from '../../src/db/embedded.js';
import { postBotApi, provision, serverEvent } from '../helpers/api.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let dir: string;
let pg: EmbeddedPostgres;
let admin: Sql;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-ingest-syncrep-'));
  pg = await EmbeddedPostgres.start({ dir });
  admin = connect(pg.superuserUrl, { max: 1, name: 'test' });
});
afterAll(async () => {
  await admin?.end();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function standbyRequired(on: boolean): Promise<void> {
  await admin.unsafe(`ALTER SYSTEM SET synchronous_standby_names = '${on ? 'a_standby_that_never_comes' : ''}'`);
  await admin`SELECT pg_reload_conf()`;
  await new Promise((r) => setTimeout(r, 300));
}

describe('a commit the synchronous standby never confirmed', () => {
  it('is answered 503, never 202, and its retry is stored once', async () => {
    const srv: RunningServer = await startServer(pg.serviceUrl, { WRITE_TIMEOUT_MS: '1000', WORKERS: '1' });
    try {
      const p = await provision(srv.url);
      const events = [serverEvent(), serverEvent()];
      await standbyRequired(true);
      const waiting = await postBotApi(srv.url, p.token, { events });
      expect(waiting.status).toBe(503);
      expect(waiting.headers.get('retry-after')).not.toBeNull();
      await standbyRequired(false);
      // The service backs off after a failure for a moment; a client honouring Retry-After comes back later.
      let again = await postBotApi(srv.url, p.token, { events });
      for (let i = 0; i < 20 && again.status === 503; i++) {
        await new Promise((r) => setTimeout(r, 500));
        again = await postBotApi(srv.url, p.token, { events });
      }
      expect(again.status).toBe(202);
      const sql = connect(pg.serviceUrl, { max: 1, name: 'test' });
      try {
        const rows = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY event_id`;
        expect(rows.map((r) => r.n)).toEqual([1, 1]);
      } finally {
        await sql.end();
      }
    } finally {
      await standbyRequired(false);
      await srv.stop();
    }
  }, 60_000);
});
