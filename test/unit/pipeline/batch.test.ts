import { describe, expect, it } from 'vitest';
import { processBotApiBatch, processWebappBatch, type BatchResult } from '../../../src/pipeline/batch.js';
import { readSummary } from '../../../src/pipeline/summary.js';

const ctx = {
  projectId: '11111111-1111-1111-1111-111111111111',
  botId: '22222222-2222-2222-2222-222222222222',
  receivedAt: '2026-11-22T10:00:00.000Z',
  channel: 'bot_api' as const,
  messengerBotId: '99',
  connection: 'token:test',
  userId: null,
};
let n = 0;
const id = () => `0b6f3a8e-5c1d-4e2a-9f7b-${String(++n).padStart(12, '0')}`;
const ev = (over: Record<string, unknown> = {}) => ({
  eventId: id(),
  eventName: 'n',
  eventDate: '2026-11-22T10:00:00Z',
  eventType: 'message',
  eventOrigin: 'custom',
  platformUserId: '42',
  ...over,
});

function ok(body: unknown): BatchResult {
  const r = processBotApiBatch(body, ctx);
  if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.refusal)}`);
  return r.batch;
}

function refusal(body: unknown) {
  const r = processBotApiBatch(body, ctx);
  if (r.ok) throw new Error('accepted');
  return r.refusal;
}

const rows = (b: BatchResult) =>
  new TextDecoder()
    .decode(b.rows)
    .split('\n')
    .filter((l) => l !== '');

describe('processBotApiBatch: request-level refusals', () => {
  it.each([
    [[], 'invalid_body'],
    ['x', 'invalid_body'],
    [null, 'invalid_body'],
    [{}, 'events_invalid'],
    [{ events: {} }, 'events_invalid'],
    [{ events: [] }, 'events_invalid'],
    [{ events: Array.from({ length: 1001 }, () => ev()) }, 'events_invalid'],
    [{ events: [ev()], version: '2' }, 'unsupported_version'],
    [{ events: [ev()], version: 1 }, 'unsupported_version'],
  ])('%j → %s', (body, code) => {
    expect(refusal(body).code).toBe(code);
  });

  it.each(['eventId', 'eventDate', 'eventType', 'eventOrigin'])(
    'refuses the whole request when an event lacks %s or has the wrong type',
    (field) => {
      const missing = refusal({ events: [ev(), ev({ [field]: undefined })] });
      expect(missing).toMatchObject({ code: 'event_invalid', details: { index: 1, field } });
      expect(refusal({ events: [ev({ [field]: 5 })] })).toMatchObject({
        code: 'event_invalid',
        details: { index: 0, field },
      });
    },
  );

  it('refuses an event that is not an object', () => {
    expect(refusal({ events: [ev(), 'x'] })).toMatchObject({ code: 'event_invalid', details: { index: 1 } });
  });

  it('accepts version "1" and exactly 1000 events', () => {
    expect(ok({ events: Array.from({ length: 1000 }, () => ev()), version: '1' }).accepted).toBe(1000);
  });
});

describe('processBotApiBatch: counting', () => {
  it('accepted + rejected + duplicated = events; first occurrence wins', () => {
    const dup = id();
    const b = ok({
      events: [
        ev({ eventId: dup }),
        ev({ eventId: dup.toUpperCase(), eventName: 'second' }),
        ev({ platformUserId: undefined }),
        ev({ eventId: 'nope' }),
        ev({ eventId: 'nope' }),
      ],
    });
    expect(b).toMatchObject({ accepted: 1, rejected: 3, duplicated: 1 });
    expect(rows(b)).toHaveLength(1);
    expect(rows(b)[0]).toContain(dup);
  });

  it('lets a rejected first occurrence still claim its id', () => {
    const dup = id();
    const b = ok({ events: [ev({ eventId: dup, platformUserId: undefined }), ev({ eventId: dup })] });
    expect(b).toMatchObject({ accepted: 0, rejected: 1, duplicated: 1 });
  });

  it('keeps 100 diagnostics and flags the rest', () => {
    const b = ok({ events: Array.from({ length: 150 }, () => ev({ eventType: 'odd' })) });
    expect(b.diagnostics).toHaveLength(100);
    expect(b.diagnosticsTruncated).toBe(true);
    expect(b.diagnosticCounts['event_type_unknown/warning']).toBe(150);
  });
});

describe('processBotApiBatch: rows', () => {
  it('encodes COPY text that escapes tabs, newlines and backslashes', () => {
    const b = ok({ events: [ev({ eventName: 'a\tb\nc\\d', text: 'line1\r\nline2', propsString: { k: 'v\\"\t' } })] });
    const [row] = rows(b);
    const cols = row!.split('\t');
    expect(cols).toHaveLength(18);
    expect(cols[3]).toBe('a\\tb\\nc\\\\d');
    expect(cols[10]).toBe('line1\\r\\nline2');
    expect(cols[11]).toBe('{"k":"v\\\\\\\\\\\\"\\\\t"}');
    expect(cols[16]).toBe('t');
    // Summarized: the request's report summary holds it.
    expect(cols[17]).toBe('t');
  });

  it('summarizes the rows it stores for the reports, and marks the one it cannot (a user id past 2^53)', () => {
    const b = ok({
      events: [ev({ platformUserId: '42' }), ev({ platformUserId: '9007199254740993' }), ev({ platformUserId: 'x' })],
    });
    expect(rows(b).map((r) => r.split('\t')[17])).toEqual(['t', 'f']);
    const users: number[] = [];
    readSummary(
      b.summary,
      () => true,
      (user) => users.push(user),
    );
    expect(users).toEqual([42]);
  });

  it('lists the events that carry a messenger action for the writer to bill', () => {
    const first = ev({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 5 } });
    const b = ok({ events: [first, ev()] });
    expect(b.rowCount).toBe(2);
    expect(b.actions).toEqual([{ key: 'update:5', eventId: first.eventId }]);
  });
});

describe('processBotApiBatch: profiles and bot', () => {
  it('upserts profiles, adds bare rows for every user seen, skips invalid items', () => {
    const b = ok({
      events: [ev({ platformUserId: '5' }), ev({ platformUserId: '6' })],
      users: [
        { messengerUserId: 5, username: 'five', firstName: 'Five', isPremium: true },
        { messengerUserId: 'x' },
        { messengerUserId: 7, isPremium: 'yes' },
        'junk',
      ],
    });
    expect(b.profiles).toEqual([
      { id: '5', username: 'five', firstName: 'Five', lastName: undefined, languageCode: undefined, isPremium: true },
    ]);
    expect(b.userIds).toEqual(['6']);
    expect(b.diagnostics.map((d) => [d.event_id, d.code, d.path, d.severity])).toEqual([
      [null, 'user_profile_invalid', 'users[1]', 'warning'],
      [null, 'user_profile_invalid', 'users[2]', 'warning'],
      [null, 'user_profile_invalid', 'users[3]', 'warning'],
    ]);
  });

  it('reads the bot snapshot, or ignores an invalid one with a warning', () => {
    const good = ok({ events: [ev()], bot: { messengerBotId: 99, name: 'B', description: 'd', starsAmount: 10 } });
    expect(good.bot).toEqual({ name: 'B', description: 'd', starsAmount: 10 });
    expect(good.diagnostics).toEqual([]);
    expect(ok({ events: [ev()], bot: { name: 'B' } }).bot).toEqual({ name: 'B', description: null, starsAmount: null });
    const bad = ok({ events: [ev()], bot: { name: 5 } });
    expect(bad.bot).toBeNull();
    expect(bad.diagnostics[0]).toMatchObject({ code: 'bot_snapshot_invalid', path: 'bot' });
  });

  it("ignores a snapshot that names another bot's messenger id, with a warning, and keeps the events", () => {
    const other = ok({ events: [ev(), ev()], bot: { messengerBotId: 12345, name: 'Squatter' } });
    expect(other.bot).toBeNull();
    expect(other.accepted).toBe(2);
    expect(other.diagnostics).toEqual([
      expect.objectContaining({
        event_id: null,
        code: 'bot_snapshot_mismatch',
        severity: 'warning',
        path: 'bot.messenger_bot_id',
      }),
    ]);
    const unconfigured = processBotApiBatch(
      { events: [ev()], bot: { messengerBotId: 99 } },
      { ...ctx, messengerBotId: null },
    );
    if (!unconfigured.ok) throw new Error('refused');
    expect(unconfigured.batch.bot).toBeNull();
    expect(unconfigured.batch.diagnostics.map((d) => d.code)).toEqual(['bot_snapshot_mismatch']);
  });
});

describe('processWebappBatch', () => {
  const user = { id: '77', username: 'u', firstName: 'F', lastName: null, languageCode: 'en', isPremium: false };
  it('stamps the initData user on every event and reports bad events per event', () => {
    const r = processWebappBatch(
      [ev({ platformUserId: '1', eventOrigin: 'platform' }), { eventName: 'x' }, 'junk'],
      { ...ctx, channel: 'webapp' },
      user,
    );
    if (!r.ok) throw new Error('refused');
    expect(r.batch).toMatchObject({ accepted: 1, rejected: 2, duplicated: 0, profiles: [user], userIds: [] });
    const cols = rows(r.batch)[0]!.split('\t');
    expect(cols[7]).toBe('77');
    expect(cols[8]).toBe('custom');
    expect(cols[9]).toBe('webapp');
    expect(r.batch.diagnostics.map((d) => d.code)).toEqual(['event_id_invalid', 'event_date_invalid', 'event_invalid']);
  });

  it('refuses an empty or oversized batch', () => {
    const webapp = (events: unknown) => processWebappBatch(events, { ...ctx, channel: 'webapp' }, user);
    const botApi = (events: unknown) => processBotApiBatch({ events }, ctx);
    const many = (n: number) => Array.from({ length: n }, () => ev());
    for (const [name, process] of [
      ['webapp', webapp],
      ['bot_api', botApi],
    ] as const) {
      expect(process([]), name).toEqual({
        ok: false,
        refusal: { code: 'events_invalid', message: '"events" is empty; send at least one event.' },
      });
      expect(process(many(1001)), name).toEqual({
        ok: false,
        refusal: {
          code: 'events_invalid',
          message: '"events" holds 1001 events; at most 1000 are allowed per request.',
          details: { count: 1001, max: 1000 },
        },
      });
      for (const notArray of [{}, 'events', 7, null, undefined, { 0: ev(), length: 1 }]) {
        expect(process(notArray), `${name} ${JSON.stringify(notArray)}`).toEqual({
          ok: false,
          refusal: { code: 'events_invalid', message: '"events" must be an array of events.' },
        });
      }
      // The largest batch allowed goes through.
      const full = process(many(1000));
      expect(full.ok && full.batch.accepted, name).toBe(1000);
    }
  });
});
