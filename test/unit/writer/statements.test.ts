// The SQL the writer builds as text, with hostile strings, through a real PostgreSQL: every value
// comes back as it went in, whatever quotes, backslashes, braces, commas or Unicode it holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/db/migrations.js';
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
