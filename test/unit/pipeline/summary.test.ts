// A commit's report summary: what it says of each event is what PostgreSQL reads of the stored row (the UTC day
// above all, checked against a real server), it reads back as written, and bytes it could not have written fail
// loudly rather than count something.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeDate } from '../../../src/pipeline/dates.js';
import { EVENT_TYPES } from '../../../src/pipeline/event.js';
import {
  readSummary,
  SUMMARY_TYPES,
  type SummaryEvent,
  SummaryFormatError,
  SummaryWriter,
  utcDay,
  withoutUsers,
} from '../../../src/pipeline/summary.js';
import { FiledUsers } from '../../../src/reports/filed-users.js';
import { WindowSummaries } from '../../../src/reports/summaries.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.js';

const P1 = '11111111-2222-4333-8444-555555555555';
const P2 = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
const AT = '2026-11-24T10:00:00.123Z';

const ev = (o: Partial<SummaryEvent> = {}): SummaryEvent => ({
  eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
  eventName: 'screen_view',
  eventType: 'interaction',
  eventDate: '2026-11-24T09:00:00Z',
  platformUserId: '42',
  startParam: null,
  ...o,
});

interface Rec {
  user: number;
  day: number;
  type: string;
  typeIndex: number;
  campaign: string | null;
  paymentId: string | null;
}

function read(bytes: Uint8Array): { sections: { projectId: string; receivedAt: number }[]; records: Rec[] } {
  const sections: { projectId: string; receivedAt: number }[] = [];
  const records: Rec[] = [];
  readSummary(
    bytes,
    (s) => {
      sections.push({ projectId: s.projectId, receivedAt: s.receivedAt });
      return true;
    },
    (user, day, typeIndex, campaign, paymentId) =>
      records.push({ user, day, type: SUMMARY_TYPES[typeIndex]!, typeIndex, campaign, paymentId }),
  );
  return { sections, records };
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('utcDay', () => {
  it("is PostgreSQL's (event_date AT TIME ZONE 'UTC')::date for every date the pipeline stores", async () => {
    const pad = (n: number, w: number) => String(n).padStart(w, '0');
    const raw = fc.record({
      y: fc.oneof(fc.integer({ min: 1, max: 9999 }), fc.constantFrom(1, 2, 99, 100, 1600, 1970, 2000, 9999)),
      mo: fc.integer({ min: 1, max: 12 }),
      d: fc.integer({ min: 1, max: 31 }),
      h: fc.constantFrom(0, 1, 12, 22, 23),
      mi: fc.constantFrom(0, 1, 29, 59),
      s: fc.constantFrom(0, 59),
      frac: fc.constantFrom('', '.5', '.999999', '.9999999'),
      off: fc.constantFrom('Z', '+00:00', '+01:00', '-01:00', '+05:30', '-09:30', '+14:00', '-12:00', '+0530', ''),
    });
    const dates = [
      ...new Set(
        fc
          .sample(raw, { numRuns: 3000, seed: 7 })
          .map((r) =>
            normalizeDate(
              `${pad(r.y, 4)}-${pad(r.mo, 2)}-${pad(r.d, 2)}T${pad(r.h, 2)}:${pad(r.mi, 2)}:${pad(r.s, 2)}${r.frac}${r.off}`,
            ),
          )
          .filter((d): d is string => d !== null),
      ),
      '0001-01-01T00:30:00+01:00',
      '9999-12-31T23:59:59.999999-14:00',
      '2024-02-29T23:30:00-00:30',
      '1970-01-01T00:00:00Z',
      '1969-12-31T23:59:59.999999Z',
    ];
    expect(dates.length).toBeGreaterThan(2000);
    const rows = await db.sql<{ d: string; n: number }[]>`
      SELECT d, ((d::timestamptz AT TIME ZONE 'UTC')::date - '1970-01-01'::date) AS n FROM unnest(${dates}::text[]) AS d`;
    const wrong = rows.filter((r) => utcDay(r.d) !== r.n).map((r) => `${r.d}: ${utcDay(r.d)} against ${r.n}`);
    expect(wrong).toEqual([]);
  });
});

describe('SummaryWriter and readSummary', () => {
  it('read back what was written: project, receipt time, user, day, type, campaign and payment id', () => {
    const w = new SummaryWriter(P1, AT, 2);
    expect(w.add(ev())).toBe(true);
    expect(w.add(ev({ platformUserId: null, eventType: 'platform', eventDate: '2026-11-24T23:30:00-01:00' }))).toBe(
      true,
    );
    expect(w.add(ev({ startParam: 'promo_1', eventName: 'successful_payment', eventType: 'payment' }))).toBe(true);
    expect(
      w.add(ev({ startParam: 'é'.repeat(300), eventName: 'refunded_payment', platformUserId: '9007199254740991' })),
    ).toBe(true);
    const { sections, records } = read(w.bytes());
    expect(sections).toEqual([{ projectId: P1, receivedAt: Date.parse(AT) }]);
    const day = Date.UTC(2026, 10, 24) / 86_400_000;
    expect(records).toEqual([
      { user: 42, day, type: 'interaction', typeIndex: 1, campaign: null, paymentId: null },
      { user: Number.NaN, day: day + 1, type: 'platform', typeIndex: 8, campaign: null, paymentId: null },
      { user: 42, day, type: 'payment', typeIndex: 2, campaign: 'promo_1', paymentId: ev().eventId },
      { user: 2 ** 53 - 1, day, type: 'interaction', typeIndex: 1, campaign: 'é'.repeat(256), paymentId: ev().eventId },
    ]);
  });

  it('leaves out what it cannot hold exactly (a user id past 2^53), and an empty campaign is none', () => {
    const w = new SummaryWriter(P1, AT, 2);
    expect(w.add(ev({ platformUserId: '9007199254740993' }))).toBe(false);
    expect(w.add(ev({ startParam: '' }))).toBe(true);
    expect(read(w.bytes()).records.map((r) => r.campaign)).toEqual([null]);
    expect(new SummaryWriter(P1, AT, 1).bytes().byteLength).toBe(0);
  });

  it('knows every event type the pipeline stores', () => {
    expect([...SUMMARY_TYPES].sort()).toEqual([...EVENT_TYPES].sort());
    // Stored summaries name a type by its index: these may never move (new types go after them).
    expect(SUMMARY_TYPES.slice(0, 9)).toEqual([
      'message',
      'interaction',
      'payment',
      'membership',
      'business',
      'poll',
      'reaction',
      'boost',
      'platform',
    ]);
    // WindowSummaries keys a user's counts by day × 16 + type: a 17th type would mix two days' counts.
    expect(SUMMARY_TYPES.length).toBeLessThanOrEqual(16);
  });

  it('throws SummaryFormatError on bytes it could not have written, never reading past them', () => {
    const w = new SummaryWriter(P1, AT, 1);
    w.add(ev({ startParam: 'abc', eventName: 'successful_payment' }));
    const good = w.bytes();
    const bad = [
      good.subarray(0, good.byteLength - 1),
      good.subarray(0, 10),
      Uint8Array.from([2, ...good.subarray(1)]),
      Uint8Array.from(good.map((b, i) => (i === 29 + 12 ? 200 : b))),
      Uint8Array.from(good.map((b, i) => (i === 29 + 13 ? 7 : b))),
    ];
    for (const b of bad) expect(() => read(b)).toThrow(SummaryFormatError);
  });

  it('throws SummaryFormatError on what the fold could not take: a user no bigint, a day no date, a count no bytes hold', () => {
    const record = (user: number, day: number) => {
      const w = new SummaryWriter(P1, AT, 1);
      w.addRecord(user, day, 1, null, null);
      return w.bytes();
    };
    const day = utcDay('2026-11-24T10:00:00Z');
    expect(read(record(Number.NaN, day)).records).toHaveLength(1);
    expect(read(record(2 ** 53 - 1, utcDay('0001-01-01T00:00:00+14:00'))).records).toHaveLength(1);
    expect(read(record(42, utcDay('9999-12-31T23:59:59-14:00'))).records).toHaveLength(1);
    for (const b of [
      record(1.5, day),
      record(2 ** 53, day),
      record(Number.POSITIVE_INFINITY, day),
      record(42, 2 ** 31 - 1),
      record(42, -(2 ** 31)),
    ])
      expect(() => read(b)).toThrow(SummaryFormatError);
    // A section that claims more records than its bytes could hold, read before anything is sized by it.
    const good = record(42, day);
    const claims = Uint8Array.from(good);
    new DataView(claims.buffer).setUint32(25, 2 ** 32 - 1, true);
    expect(() => read(claims)).toThrow(SummaryFormatError);
    expect(() => withoutUsers(claims, P1, new Set([42]))).toThrow(SummaryFormatError);
    const never = Uint8Array.from(good);
    new DataView(never.buffer).setFloat64(17, Number.NaN, true);
    expect(() => read(never)).toThrow(SummaryFormatError);
  });

  it('throws SummaryFormatError on a campaign no report table could key: empty, holding NUL or bytes no UTF-8, or longer than 256 code points can be (1,024 bytes)', () => {
    const named = (campaign: string) => {
      const w = new SummaryWriter(P1, AT, 1);
      w.addRecord(42, utcDay('2026-11-24T10:00:00Z'), 1, campaign, null);
      return w.bytes();
    };
    // The longest a writer makes: 256 code points of four bytes each.
    expect(read(named('😀'.repeat(256))).records[0]!.campaign).toBe('😀'.repeat(256));
    for (const campaign of ['', 'a\u0000b', '😀'.repeat(256) + 'a', 'x'.repeat(65_535)])
      expect(() => read(named(campaign))).toThrow(SummaryFormatError);
    // Bytes that are no UTF-8 (a hand edit), which would each read back as three.
    const bad = Uint8Array.from(named('abc'));
    bad[bad.byteLength - 1] = 0xff;
    expect(() => read(bad)).toThrow(SummaryFormatError);
  });
});

describe('withoutUsers', () => {
  it("drops the users' records of that project only, and says so when nothing is left", () => {
    const a = new SummaryWriter(P1, AT, 3);
    a.add(ev({ platformUserId: '1' }));
    a.add(ev({ platformUserId: '2', startParam: 'x' }));
    a.add(ev({ platformUserId: null }));
    const b = new SummaryWriter(P2, AT, 1);
    b.add(ev({ platformUserId: '1' }));
    const both = Buffer.concat([a.bytes(), b.bytes()]);
    const kept = read(withoutUsers(both, P1, new Set([1]))!);
    expect(kept.sections.map((s) => s.projectId)).toEqual([P1, P2]);
    expect(kept.records.map((r) => r.user)).toEqual([2, Number.NaN, 1]);
    expect(withoutUsers(b.bytes(), P2, new Set([1]))).toBeNull();
  });
});

describe('WindowSummaries', () => {
  it('groups the sections received after where it begins as the fold does, and skips those before', async () => {
    const at = (ms: number) => new Date(Date.parse(AT) + ms).toISOString();
    const inside = new SummaryWriter(P1, at(0), 4);
    inside.add(ev());
    inside.add(ev());
    inside.add(ev({ startParam: 'c1' }));
    inside.add(ev({ eventName: 'successful_payment', eventType: 'payment' }));
    const later = new SummaryWriter(P1, at(500), 2);
    later.add(ev());
    later.add(ev({ startParam: 'c1' }));
    const before = new SummaryWriter(P1, at(-1), 1);
    before.add(ev());
    const w = new WindowSummaries(Date.parse(AT) - 1);
    w.add(Buffer.concat([inside.bytes(), later.bytes(), before.bytes()]));
    expect(w.skipped).toBe(1);
    const r = await w.rows();
    const rows = r.projectIds.map((_, i) => ({
      type: r.types[i],
      user: r.users[i],
      campaign: r.campaigns[i],
      payment: r.paymentIds[i],
      n: r.counts[i],
      first: r.firstAt[i],
      last: r.lastAt[i],
    }));
    expect(rows).toEqual([
      { type: 'payment', user: '42', campaign: null, payment: ev().eventId, n: 1, first: at(0), last: at(0) },
      { type: 'interaction', user: '42', campaign: null, payment: null, n: 3, first: null, last: null },
      { type: 'interaction', user: '42', campaign: 'c1', payment: null, n: 2, first: at(0), last: at(500) },
    ]);
  });
});

describe('WindowSummaries with the users the reports already file', () => {
  const day = utcDay('2026-11-24T09:00:00Z');
  const window = (build: (w: SummaryWriter) => void, n: number) => {
    const s = new SummaryWriter(P1, AT, n);
    build(s);
    const w = new WindowSummaries(Date.parse(AT) - 1);
    w.add(s.bytes());
    return w;
  };
  const rowsOf = (r: Awaited<ReturnType<WindowSummaries['rows']>>) =>
    r.projectIds.map((_, i) => ({ user: r.users[i], type: r.types[i], campaign: r.campaigns[i], n: r.counts[i] }));

  it("counts a filed user's events on their filed days alone, and names everyone else", async () => {
    const filed = new FiledUsers();
    filed.add(P1, 1, [day]);
    filed.add(P1, 2, [day]);
    filed.add(P1, 3, [day - 1]);
    filed.add(P1, 4, [day]);
    filed.add(P1, 5, [day]);
    const w = window((s) => {
      s.add(ev({ platformUserId: '1' }));
      s.add(ev({ platformUserId: '1', eventType: 'message', eventName: 'message_received' }));
      s.add(ev({ platformUserId: '2' }));
      // Filed on another day only.
      s.add(ev({ platformUserId: '3' }));
      // A campaign, or a payment: the probes decide.
      s.add(ev({ platformUserId: '4', startParam: 'c1' }));
      s.add(ev({ platformUserId: '5', eventName: 'successful_payment', eventType: 'payment' }));
      s.add(ev({ platformUserId: '5' }));
      // Not filed at all.
      s.add(ev({ platformUserId: '6' }));
    }, 8);
    const rows = rowsOf(await w.rows(filed));
    expect(rows.filter((r) => r.user === null)).toEqual([
      { user: null, type: 'interaction', campaign: null, n: 2 },
      { user: null, type: 'message', campaign: null, n: 1 },
    ]);
    expect(rows.filter((r) => r.user !== null).map((r) => r.user)).toEqual(['5', '3', '5', '6', '4']);
    expect(rows.reduce((n, r) => n + r.n, 0)).toBe(8);

    // Once folded: 3, 5 and 6 are filed on the day, 1 and 2 still; 4 may have a campaign now, and is forgotten.
    await w.fileInto(filed);
    for (const user of [1, 2, 3, 5, 6]) expect(filed.holds(P1, user, [day])).toBe(true);
    expect(filed.holds(P1, 3, [day - 1, day])).toBe(true);
    expect(filed.holds(P1, 4, [day])).toBe(false);
    expect(filed.size).toBe(5);
  });

  it('compares a few days of a user, however many days the window holds for them (each chosen by the client)', async () => {
    const filed = new FiledUsers();
    const s = new SummaryWriter(P1, AT, 100_000);
    for (let d = 0; d < 100_000; d++) s.addRecord(7, d, 0, null, null);
    const w = new WindowSummaries(Date.parse(AT) - 1);
    w.add(s.bytes());
    // Unbounded, comparing each day with those seen before took ~5·10⁹ steps on the main thread.
    expect((await w.rows(filed)).counts.length).toBe(100_000);
    await w.fileInto(filed);
    expect(filed.holds(P1, 7, [1, 2, 3, 4])).toBe(true);
  });

  it('names a user the table rows of the window name (marked), and forgets them once folded', async () => {
    const filed = new FiledUsers();
    filed.add(P1, 1, [day]);
    const w = window((s) => s.add(ev({ platformUserId: '1' })), 1);
    w.mark(P1, 1, true);
    expect(rowsOf(await w.rows(filed))).toEqual([{ user: '1', type: 'interaction', campaign: null, n: 1 }]);
    await w.fileInto(filed);
    expect(filed.holds(P1, 1, [day])).toBe(false);
  });

  it('names every user of a project marked whole, held or not, and files none of them; other projects as before', async () => {
    const filed = new FiledUsers();
    for (const p of [P1, P2]) for (const user of [1, 2]) filed.add(p, user, [day]);
    const s = new SummaryWriter(P1, AT, 2);
    s.add(ev({ platformUserId: '1' }));
    s.add(ev({ platformUserId: '3' }));
    const t = new SummaryWriter(P2, AT, 2);
    t.add(ev({ platformUserId: '1' }));
    t.add(ev({ platformUserId: '3' }));
    const w = new WindowSummaries(Date.parse(AT) - 1);
    w.add(Buffer.concat([s.bytes(), t.bytes()]));
    w.markProject(P1);
    expect(w.marksUser(P1, 1) && w.marksUser(P1, 3) && w.marksProject(P1)).toBe(true);
    expect(w.marksUser(P2, 1) || w.marksProject(P2)).toBe(false);
    const r = await w.rows(filed);
    // P1's user 1, though held, is named; P2's is counted alone.
    expect(r.projectIds.map((p, i) => [p, r.users[i]])).toEqual([
      [P1, '1'],
      [P1, '3'],
      [P2, '3'],
      [P2, null],
    ]);
    await w.fileInto(filed);
    expect(filed.holds(P1, 3, [day])).toBe(false);
    for (const user of [1, 2, 3]) expect(filed.holds(P2, user, [day])).toBe(true);
  });
});
