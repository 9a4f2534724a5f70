// The SQL the writer builds as text, with hostile strings, through a real PostgreSQL: every value
// comes back as it went in, whatever quotes, backslashes, braces, commas or Unicode it holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/db/migrate.js';
import { maintainPartitions } from '../../../src/db/partitions.js';
import { PREPARE_STATEMENTS, sqlArray, updateBotsSql, upsertUsersSql } from '../../../src/writer/statements.js';
import { WireConnection } from '../../../src/writer/wire.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.js';

let db: TestDatabase;
let conn: WireConnection;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql);
  conn = await WireConnection.connect({ url: db.url, applicationName: 'statements test', connectTimeoutMs: 5000 });
  const [prepared] = await conn.script([{ sql: PREPARE_STATEMENTS }]);
  expect(prepared!.error).toBeNull();
});
afterAll(async () => {
  conn?.close();
  await db?.drop();
});

const HOSTILE = [
  '',
  ' ',
  'NULL',
  'null',
  'Null',
  '"NULL"',
  "'",
  "''",
  '"',
  '\\',
  '\\\\',
  '\\"',
  '{',
  '}',
  '{}',
  '{a,b}',
  ',',
  'a,b',
  '\t',
  '\n',
  '\r\n',
  "x'); DROP TABLE events; --",
  '$1',
  '$$',
  "E'\\x41'",
  '😀',
  '\u202e',
  '\ufeff',
  'e\u0301',
  'ä'.repeat(300),
  ' leading',
  'trailing ',
  'a\\,b',
  '\\N',
];

async function query(sql: string): Promise<(string | null)[][]> {
  const [r] = await conn.script([{ sql }]);
  if (r!.error !== null) throw r!.error;
  return r!.statements[0]!.rows;
}

describe('sqlArray', () => {
  it('round-trips hostile text, in order, with NULL distinct from "NULL"', async () => {
    const values = [...HOSTILE, null];
    const rows = await query(`SELECT x FROM unnest(${sqlArray(values, 'text')}) WITH ORDINALITY AS t(x, n) ORDER BY n`);
    expect(rows.map((r) => r[0])).toEqual(values);
  });

  it('round-trips numbers, booleans and ids', async () => {
    const rows = await query(
      `SELECT ${sqlArray(['9223372036854775807', 1, null], 'bigint')}::text, ${sqlArray([true, false, null], 'bool')}::text, ${sqlArray(['0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b'], 'uuid')}::text`,
    );
    expect(rows[0]).toEqual(['{9223372036854775807,1,NULL}', '{t,f,NULL}', '{0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b}']);
  });
});

describe('statements built as text', () => {
  it('profiles with hostile names are stored as sent', async () => {
    const [{ project_id: projectId }] = await db.sql<
      { project_id: string }[]
    >`INSERT INTO projects (name) VALUES ('p') RETURNING project_id`;
    const rows = HOSTILE.map((name, i) => ({
      projectId: projectId!,
      id: String(1000 + i),
      username: name,
      firstName: name,
      lastName: null,
      languageCode: name.slice(0, 5),
      isPremium: i % 2 === 0,
    }));
    await query(`BEGIN; ${upsertUsersSql(rows, true)}; COMMIT`);
    const stored = await db.sql<
      { id: string; username: string; first_name: string }[]
    >`SELECT messenger_user_id::text AS id, username, first_name FROM users WHERE project_id = ${projectId!} ORDER BY messenger_user_id`;
    expect(stored.map((r) => [r.username, r.first_name])).toEqual(HOSTILE.map((n) => [n, n]));
  });

  it('a bot snapshot with a hostile name and description is stored as sent', async () => {
    const [{ bot_id: botId }] = await db.sql<{ bot_id: string }[]>`INSERT INTO bots DEFAULT VALUES RETURNING bot_id`;
    for (const name of HOSTILE.filter((n) => n !== '')) {
      await query(updateBotsSql([{ botId: botId!, name, description: `${name}|${name}`, starsAmount: 1.5 }]));
      const [bot] = await db.sql<
        { name: string; description: string; stars_amount: string }[]
      >`SELECT name, description, stars_amount::text FROM bots WHERE bot_id = ${botId!}`;
      expect([bot!.name, bot!.description, bot!.stars_amount]).toEqual([name, `${name}|${name}`, '1.5']);
    }
  });
});

describe('prepared statements', () => {
  // A writer connection keeps a statement's generic plan for as long as it lives. Made while the partition held a
  // thousand rows, billing's plan read every row received in the transaction's window, other transactions' too, and
  // cost one connection ~27 ms a commit under load (b-small at 0.7x, PostgreSQL CPU per request doubled).
  it("billing finds the transaction's rows by key, not by reading the window they were received in", async () => {
    await maintainPartitions(db.sql, null);
    const projectId = '11111111-1111-4111-8111-111111111111';
    await db.sql.unsafe(`INSERT INTO events (project_id, bot_id, event_id, event_name, event_type, event_date, received_at,
        platform_user_id, origin, channel, billed)
      SELECT '${projectId}', '22222222-2222-4222-8222-222222222222', gen_random_uuid(), 'message_received', 'message',
        now(), now() - interval '20 s' + i * interval '10 ms', 100000000 + i, 'custom', 'bot_api', true
      FROM generate_series(1, 1000) i`);
    await db.sql`ANALYZE events`;
    const ids = (await db.sql<{ id: string }[]>`SELECT event_id AS id FROM events LIMIT 10`).map((r) => r.id);
    const [r] = await conn.script([
      {
        sql: `BEGIN; SET LOCAL plan_cache_mode = force_generic_plan;
          EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE tg_billing(${sqlArray(
            ids.map(() => projectId),
            'uuid',
          )}, ${sqlArray(
            ids.map((_, i) => `action:${i}`),
            'text',
          )}, ${sqlArray(
            ids.map(() => 'token:a'),
            'text',
          )}, ${sqlArray(ids, 'uuid')}, ${sqlArray(
            ids.map((_, i) => i),
            'int',
          )}, now() - interval '1 minute', now(), ${sqlArray([projectId], 'uuid')}, ${sqlArray([10], 'bigint')}, 1,
          '33333333-3333-4333-8333-333333333333');
          ROLLBACK`,
      },
    ]);
    expect(r!.error).toBeNull();
    const plan = JSON.parse(r!.statements[2]!.rows[0]![0]!) as [{ Plan: PlanNode }];
    // Every node that read events rows: how many it read and threw away.
    const read: { node: string; removed: number }[] = [];
    const walk = (n: PlanNode) => {
      if (n['Relation Name']?.startsWith('events'))
        read.push({ node: n['Node Type'], removed: (n['Rows Removed by Filter'] ?? 0) * (n['Actual Loops'] ?? 1) });
      for (const c of n.Plans ?? []) walk(c);
    };
    walk(plan[0].Plan);
    expect(read.length).toBeGreaterThan(0);
    // None of the ten rows is this transaction's, so each costs one row looked at by key, not a thousand.
    expect(read.reduce((a, x) => a + x.removed, 0)).toBeLessThanOrEqual(2 * ids.length);
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Rows Removed by Filter'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}
