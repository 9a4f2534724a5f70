// A commit's mini-app session records: which events have one (the same rule the fold's SQL applies to rows no summary
// holds), that they read back as written and leave with their user, that bytes the writer could not have made fail
// loudly, and how a window groups them.
import { describe, expect, it } from 'vitest';
import {
  readSessions,
  type SessionMark,
  SessionSummaryFormatError,
  SessionSummaryWriter,
  sessionMark,
  sessionsWithoutUsers,
} from '../../../src/pipeline/session-summary.js';
import { readSummary, SummaryFormatError, SummaryWriter } from '../../../src/pipeline/summary.js';
import { WindowSummaries } from '../../../src/reports/summaries.js';

const P1 = '11111111-2222-4333-8444-555555555555';
const AT = '2026-11-24T10:00:00.123Z';
const S = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const stored = (eventName: string, props: Record<string, string>, eventDate = '2026-11-24T09:00:00.250Z') => ({
  eventName,
  eventDate,
  propsString: JSON.stringify(props),
});

function read(bytes: Uint8Array): [number, SessionMark][] {
  const out: [number, SessionMark][] = [];
  readSessions(
    bytes,
    () => true,
    (user, m) => out.push([user, m]),
  );
  return out;
}

describe('session records', () => {
  it('mark a webapp event whose stored propsString holds a UUID session_id as sent; the platform on app_open only', () => {
    const open = { session_id: S.toUpperCase(), platform: 'ios' };
    expect(sessionMark('webapp', open, stored('app_open', open))).toEqual({
      id: S,
      at: Date.parse('2026-11-24T09:00:00.250Z'),
      kind: 1,
      platform: 'ios',
    });
    expect(sessionMark('webapp', open, stored('app_close', open))).toMatchObject({ kind: 2, platform: null });
    expect(sessionMark('webapp', open, stored('tap', open))).toMatchObject({ kind: 0, platform: null });
    // A word the messenger does not name counts as `other`; something that is no word, as none.
    const odd = { session_id: S, platform: 'smart_fridge' };
    expect(sessionMark('webapp', odd, stored('app_open', odd))!.platform).toBe('other');
    const proto = { session_id: S, platform: '__proto__' };
    expect(sessionMark('webapp', proto, stored('app_open', proto))!.platform).toBe('other');
    const spaced = { session_id: S, platform: 'iOS 17' };
    expect(sessionMark('webapp', spaced, stored('app_open', spaced))!.platform).toBeNull();
    // Not a mini-app's, no UUID, not as stored, a date JavaScript and PostgreSQL write differently (UTC year 0).
    expect(sessionMark('bot_api', open, stored('app_open', open))).toBeNull();
    expect(sessionMark('webapp', { session_id: 'abc' }, stored('app_open', { session_id: 'abc' }))).toBeNull();
    expect(sessionMark('webapp', { session_id: S }, stored('app_open', {}))).toBeNull();
    expect(sessionMark('webapp', open, stored('app_open', open, '0001-01-01T00:30:00.000+01:00'))).toBeNull();
    expect(sessionMark('webapp', open, stored('app_open', open, '9999-12-31T23:59:59.999Z'))).not.toBeNull();
  });

  it('read back as written, leave with their user, and fail loudly on bytes the writer could not have made', () => {
    const w = new SessionSummaryWriter(P1, AT);
    const mark: SessionMark = { id: S, at: Date.parse('2026-11-24T09:00:00.250Z'), kind: 1, platform: 'android' };
    w.add(42, mark);
    w.add(43, { ...mark, kind: 2, platform: null });
    const bytes = w.bytes();
    expect(read(bytes)).toEqual([
      [42, mark],
      [43, { ...mark, kind: 2, platform: null }],
    ]);
    expect(read(sessionsWithoutUsers(bytes, P1, new Set([42]))!)).toEqual([[43, { ...mark, kind: 2, platform: null }]]);
    expect(sessionsWithoutUsers(bytes, P1, new Set([42, 43]))).toBeNull();
    expect(new SessionSummaryWriter(P1, AT).bytes().byteLength).toBe(0);
    const first = 29;
    const bad = (edit: (b: Buffer) => void) => {
      const b = Buffer.from(bytes);
      edit(b);
      return () => read(b);
    };
    expect(bad((b) => (b[first + 32] = 3))).toThrow(SessionSummaryFormatError);
    expect(bad((b) => (b[first + 34] = 'A'.charCodeAt(0)))).toThrow(SessionSummaryFormatError);
    expect(bad((b) => b.writeDoubleLE(Date.parse('+010000-01-01T00:00:00Z'), first + 24))).toThrow(
      SessionSummaryFormatError,
    );
    expect(bad((b) => b.writeDoubleLE(1.5, first))).toThrow(SessionSummaryFormatError);
    expect(() => read(bytes.subarray(0, bytes.byteLength - 1))).toThrow(SessionSummaryFormatError);
    // A receipt time no Date holds (a hand edit) is refused as unreadable, here and in the summary beside it: an
    // erasure writes sections back with the time as a Date, and would otherwise fail on every attempt.
    expect(bad((b) => b.writeDoubleLE(9e15, 17))).toThrow(SessionSummaryFormatError);
    const summary = new SummaryWriter(P1, AT, 1);
    summary.addRecord(42, 20_000, 0, null, null);
    const far = Buffer.from(summary.bytes());
    far.writeDoubleLE(9e15, 17);
    expect(() =>
      readSummary(
        far,
        () => true,
        () => {},
      ),
    ).toThrow(SummaryFormatError);
  });

  it('group in a window by project, user and session: the earliest open and its platform, the latest event and close', () => {
    const w = new SessionSummaryWriter(P1, AT);
    const at = (iso: string) => Date.parse(iso);
    w.add(42, { id: S, at: at('2026-11-24T09:00:05Z'), kind: 1, platform: 'weba' });
    w.add(42, { id: S, at: at('2026-11-24T09:00:00Z'), kind: 1, platform: 'ios' });
    w.add(42, { id: S, at: at('2026-11-24T09:03:00Z'), kind: 0, platform: null });
    w.add(42, { id: S, at: at('2026-11-24T09:04:00Z'), kind: 2, platform: null });
    w.add(7, { id: S, at: at('2026-11-24T09:09:00Z'), kind: 0, platform: null });
    const window = new WindowSummaries(Date.parse(AT) - 1);
    window.addSessions(w.bytes());
    // A section received at or before where summaries are read from is left out.
    const outside = new WindowSummaries(Date.parse(AT));
    outside.addSessions(w.bytes());
    expect(outside.sessionRows().sessionIds).toEqual([]);
    expect(window.sessionRows()).toEqual({
      projectIds: [P1, P1],
      sessionIds: [S, S],
      users: ['42', '7'],
      openedAt: ['2026-11-24T09:00:00.000Z', null],
      platforms: ['ios', null],
      lastAt: ['2026-11-24T09:03:00.000Z', '2026-11-24T09:09:00.000Z'],
      closedAt: ['2026-11-24T09:04:00.000Z', null],
    });
  });
});
