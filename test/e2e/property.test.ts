// Property-based: random events and batches sent over HTTP; the answer must match the pure
// pipeline's, the counts must add up, and PostgreSQL must hold exactly the accepted events with
// their repaired values.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processBotApiBatch } from '../../src/pipeline/batch.js';
import { EVENT_COLUMNS } from '../../src/writer/columns.js';
import { call, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '1000000' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const weird = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\tb\nc\\d',
    '\\N',
    '\ud800',
    '\udc00x',
    '👋',
    'x'.repeat(5000),
    '__proto__',
    'constructor',
    '$os',
    'tg.total_amount',
    'tg.chat_id',
  ),
);
const anyValue = fc.oneof(
  weird,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt().map(String), // biome-ignore lint/correctness/noPrecisionLoss: a value past 2^53, as a client may send it.
  fc.constant(9007199254740993),
  fc.array(fc.integer(), { maxLength: 2 }),
);
const key = fc.oneof(
  fc.constantFrom(
    'k',
    'plan',
    'a.b',
    '_x',
    'tg.currency',
    'tg.total_amount',
    'tg.chat_id',
    'tg.message_id',
    'tg.update_id',
    '$reserved',
    '1bad',
    'bad-key',
    '__proto__',
    'constructor',
  ),
  weird,
);
const bucket = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(key, anyValue, { maxKeys: 6 }) },
  { weight: 1, arbitrary: anyValue },
);

/** Mostly valid, sometimes not: every branch is reached, and enough events get through. */
const mostly = <T, U>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: invalid });
const goodName = fc.oneof(
  fc.constantFrom('start', 'button_click', 'successful_payment'),
  fc.string({ minLength: 1 }),
  weird.filter((x) => x !== ''),
);
const goodDate = fc
  .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

const event = fc.record(
  {
    eventId: fc.oneof(
      { weight: 12, arbitrary: fc.constant('fresh') },
      { weight: 3, arbitrary: fc.constant('dup') },
      { weight: 1, arbitrary: weird },
    ),
    eventName: mostly(goodName, fc.oneof(fc.constant(''), fc.integer())),
    eventDate: mostly(
      goodDate,
      fc.constantFrom('2026-01-01 10:00', '2026-02-30T00:00:00Z', 'yesterday', '+275760-09-13T00:00:00Z'),
    ),
    eventType: mostly(
      fc.constantFrom(
        'message',
        'interaction',
        'payment',
        'membership',
        'business',
        'poll',
        'reaction',
        'boost',
        'platform',
      ),
      weird,
    ),
    eventOrigin: mostly(fc.constantFrom('platform', 'custom'), fc.constant('native')),
    platformUserId: mostly(
      fc.bigInt({ min: 1n, max: 9223372036854775807n }).map(String),
      fc.oneof(fc.constantFrom('0', '-1', '9223372036854775808', 'abc'), fc.integer()),
    ),
    text: mostly(weird, fc.integer()),
    propsString: bucket,
    propsLong: bucket,
    propsFloat: bucket,
    propsBool: bucket,
  },
  { requiredKeys: ['eventId', 'eventDate', 'eventType', 'eventOrigin'] },
);

/** Gives the ids meaning: fresh UUIDs, repeats of an earlier one in the batch, or junk. */
function materialize(events: Record<string, unknown>[]): Record<string, unknown>[] {
  const ids: string[] = [];
  return events.map((e) => {
    let eventId = e.eventId;
    if (eventId === 'fresh' || (eventId === 'dup' && ids.length === 0)) eventId = randomUUID();
    else if (eventId === 'dup') eventId = ids[ids.length - 1]!.toUpperCase();
    if (typeof eventId === 'string') ids.push(eventId);
    return { ...e, eventId };
  });
}

/** The COPY text rows of the pure pipeline, as column → value. */
function copyRows(bytes: Uint8Array): Record<string, string | null>[] {
  const unescaped = (v: string) =>
    v === '\\N' ? null : v.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r' })[c] ?? c);
  return new TextDecoder()
    .decode(bytes)
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const cols = line.split('\t').map(unescaped);
      return Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, cols[i] ?? null]));
    });
}

describe('random batches on bot_api', () => {
  it('agree with the pure pipeline and leave exactly the accepted events in PostgreSQL', async () => {
    const seen = { runs: 0, refused: 0, accepted: 0, rejected: 0, duplicated: 0, warnings: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 25 }), async (raw) => {
        const events = materialize(raw as Record<string, unknown>[]);
        const body = JSON.stringify({ events });
        const res = await call(`${srv.url}/tg`, { method: 'POST', headers: { 'x-api-key': p.token }, body });
        const oracle = processBotApiBatch(JSON.parse(body), {
          projectId: p.projectId,
          botId: p.botId,
          receivedAt: new Date().toISOString(),
          channel: 'bot_api',
          connection: 'token:test',
          userId: null,
        });
        seen.runs++;
        if (!oracle.ok) {
          seen.refused++;
          expect(res.status).toBe(400);
          expect(res.body.error).toBe(oracle.refusal.code);
          return;
        }
        const b = oracle.batch;
        expect(res.status).toBe(b.accepted > 0 ? 202 : 400);
        const r = res.body;
        seen.accepted += r.accepted;
        seen.rejected += r.rejected;
        seen.duplicated += r.not_consumed_duplicated;
        seen.warnings += r.diagnostics.filter((d: { severity: string }) => d.severity === 'warning').length;
        expect(r.accepted + r.rejected + r.not_consumed_duplicated).toBe(events.length);
        expect([r.accepted, r.rejected, r.not_consumed_duplicated]).toEqual([b.accepted, b.rejected, b.duplicated]);
        expect(r.diagnostics).toEqual(b.diagnostics);

        const expected = copyRows(b.rows);
        const ids = events
          .map((e) => e.eventId)
          .filter((id): id is string => typeof id === 'string' && /^[0-9a-f-]{36}$/i.test(id));
        const stored = await db.sql<Record<string, unknown>[]>`
          SELECT event_id::text, event_name, event_type, to_char(event_date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS event_date,
                 platform_user_id::text, origin, text, props_string::text, props_long::text, props_float::text, props_bool::text, tg::text, billed
          FROM events WHERE project_id = ${p.projectId} AND event_id = ANY(${ids}::uuid[])`;
        // Every accepted event is stored exactly once, and only those.
        expect(stored.length).toBe(b.accepted);
        const byId = new Map(stored.map((s) => [s.event_id as string, s]));
        expect(byId.size).toBe(stored.length);
        // Rejected events (an error diagnostic) are not stored.
        for (const d of r.diagnostics)
          if (d.severity === 'error' && typeof d.event_id === 'string' && /^[0-9a-f-]{36}$/i.test(d.event_id)) {
            const sameId = events.filter(
              (e) => typeof e.eventId === 'string' && e.eventId.toLowerCase() === d.event_id.toLowerCase(),
            );
            if (sameId.length === 1) expect(byId.has(d.event_id.toLowerCase())).toBe(false);
          }
        // With the values the pipeline repaired (jsonb is compared as JSON).
        const json = (v: unknown) => (v === null ? null : JSON.parse(v as string));
        for (const e of expected) {
          const s = byId.get(e.event_id!)!;
          expect(s).toBeDefined();
          expect([s.event_name, s.event_type, s.platform_user_id, s.origin, s.text]).toEqual([
            e.event_name,
            e.event_type,
            e.platform_user_id,
            e.origin,
            e.text,
          ]);
          for (const c of ['props_string', 'props_long', 'props_float', 'props_bool', 'tg'] as const)
            expect(json(s[c])).toEqual(json(e[c]));
        }
      }),
      { numRuns: 60, interruptAfterTimeLimit: 60_000 },
    );
    expect((await call(`${srv.url}/healthz`)).status).toBe(200);
    // The generators must reach every branch, or the property proves little.
    console.log('property runs', seen);
    expect(seen.runs).toBe(60);
    for (const k of ['accepted', 'rejected', 'duplicated', 'warnings'] as const) expect(seen[k]).toBeGreaterThan(10);
  }, 90_000);
});
