import { describe, expect, it } from 'vitest';
import { IngestStats } from '../../../src/quality/stats.js';

const MINUTE = 60_000;
const START = Date.UTC(2026, 10, 22, 10, 0, 30); // half a minute into 10:00 UTC
const A = 'project-a';
const B = 'project-b';

function setup(maxProjects?: number) {
  let t = START;
  const stats = new IngestStats(() => t, maxProjects);
  return {
    stats,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

const counts = (
  accepted: number,
  o: Partial<{ rejected: number; duplicated: number; storedNotBilled: number; redelivered: number }> = {},
) => ({ accepted, rejected: 0, duplicated: 0, storedNotBilled: 0, redelivered: 0, ...o });
const zero = (minute: string) => ({ minute, accepted: 0, rejected: 0, duplicated: 0, storedNotBilled: 0 });
const iso = (ms: number) => new Date(ms).toISOString();

describe('IngestStats', () => {
  it('lists the last 60 minutes oldest first, zeros included, for a project never seen', () => {
    const { stats } = setup();
    const s = stats.get(A);
    expect(s.since).toBe(iso(START));
    expect(s.minutes).toHaveLength(60);
    expect(s.minutes[0]).toEqual(zero('2026-11-22T09:01:00.000Z'));
    expect(s.minutes[59]).toEqual(zero('2026-11-22T10:00:00.000Z'));
    for (let i = 1; i < 60; i++)
      expect(Date.parse(s.minutes[i]!.minute) - Date.parse(s.minutes[i - 1]!.minute)).toBe(MINUTE);
    expect(s.totals).toEqual({ accepted: 0, rejected: 0, duplicated: 0, storedNotBilled: 0, redelivered: 0 });
    expect(s.topDiagnostics).toEqual([]);
  });

  it('counts per minute and in totals, per project', () => {
    const { stats, advance } = setup();
    stats.record(A, counts(3, { rejected: 1, duplicated: 2, storedNotBilled: 1, redelivered: 4 }), {});
    advance(20_000); // still 10:00
    stats.record(A, counts(2), {});
    advance(MINUTE); // 10:01
    stats.record(A, counts(5, { rejected: 2 }), {});
    stats.record(B, counts(7), {});
    const s = stats.get(A);
    expect(s.minutes).toHaveLength(60);
    expect(s.minutes.at(-1)).toEqual({
      minute: '2026-11-22T10:01:00.000Z',
      accepted: 5,
      rejected: 2,
      duplicated: 0,
      storedNotBilled: 0,
    });
    expect(s.minutes.at(-2)).toEqual({
      minute: '2026-11-22T10:00:00.000Z',
      accepted: 5,
      rejected: 1,
      duplicated: 2,
      storedNotBilled: 1,
    });
    expect(s.minutes.slice(0, -2)).toEqual(
      Array.from({ length: 58 }, (_, i) => zero(iso(Date.UTC(2026, 10, 22, 9, 2 + i)))),
    );
    expect(s.totals).toEqual({ accepted: 10, rejected: 3, duplicated: 2, storedNotBilled: 1, redelivered: 4 });
    expect(stats.get(B).totals).toEqual({
      accepted: 7,
      rejected: 0,
      duplicated: 0,
      storedNotBilled: 0,
      redelivered: 0,
    });
    expect(stats.get(B).minutes.at(-2)).toEqual(zero('2026-11-22T10:00:00.000Z'));
  });

  it('hands out copies: a caller cannot change the counts', () => {
    const { stats } = setup();
    stats.record(A, counts(1), {});
    stats.get(A).totals.accepted = 99;
    expect(stats.get(A).totals.accepted).toBe(1);
  });

  it('slides the window: a minute leaves the list after 60 minutes, and its memory is dropped', () => {
    const { stats, advance } = setup();
    stats.record(A, counts(1), {});
    advance(59 * MINUTE); // 10:59: 10:00 is the oldest minute shown
    expect(stats.get(A).minutes[0]).toEqual({
      minute: '2026-11-22T10:00:00.000Z',
      accepted: 1,
      rejected: 0,
      duplicated: 0,
      storedNotBilled: 0,
    });
    advance(MINUTE); // 11:00
    const s = stats.get(A);
    expect(s.minutes[0]).toEqual(zero('2026-11-22T10:01:00.000Z'));
    expect(s.minutes.every((m) => m.accepted === 0)).toBe(true);
    expect(s.totals.accepted).toBe(1);
    // Only minutes within the window are kept: a long-lived project holds at most 60.
    const kept = () =>
      (stats as unknown as { projects: Map<string, { minutes: Map<number, unknown> }> }).projects.get(A)!.minutes;
    stats.record(A, counts(1), {});
    expect([...kept().keys()]).toEqual([Date.UTC(2026, 10, 22, 11, 0)]);
    for (let i = 0; i < 150; i++) {
      advance(MINUTE);
      stats.record(A, counts(1), {});
    }
    expect(kept().size).toBe(60);
    expect(stats.get(A).minutes.map((m) => m.accepted)).toEqual(Array(60).fill(1));
    expect(stats.get(A).totals.accepted).toBe(152);
  });

  it('lists the top diagnostics by count, then by code, at most 10, the severities of one code together', () => {
    const { stats } = setup();
    stats.record(A, counts(0), { 'event_date_invalid/error': 2, 'text_truncated/warning': 5 });
    stats.record(A, counts(0), {
      'event_date_invalid/error': 3,
      'field_unknown/warning': 1,
      'schema_violation/error': 1,
      'schema_violation/warning': 3,
    });
    expect(stats.get(A).topDiagnostics).toEqual([
      { code: 'event_date_invalid', count: 5 },
      { code: 'text_truncated', count: 5 },
      { code: 'schema_violation', count: 4 },
      { code: 'field_unknown', count: 1 },
    ]);
    const codes = [
      'event_missing_identity',
      'platform_user_id_invalid',
      'event_id_invalid',
      'event_origin_invalid',
      'event_invalid',
      'event_type_unknown',
      'event_name_truncated',
      'text_type_invalid',
      'prop_key_reserved',
    ] as const;
    stats.record(A, counts(0), Object.fromEntries(codes.map((c) => [`${c}/error`, 1])));
    const top = stats.get(A).topDiagnostics;
    expect(top).toHaveLength(10);
    expect(top.slice(0, 4).map((d) => d.code)).toEqual([
      'event_date_invalid',
      'text_truncated',
      'schema_violation',
      'event_id_invalid',
    ]);
    // Ties at 1, alphabetically: the first six of the ten tied codes make the cut.
    expect(top.slice(4).map((d) => d.code)).toEqual([
      'event_invalid',
      'event_missing_identity',
      'event_name_truncated',
      'event_origin_invalid',
      'event_type_unknown',
      'field_unknown',
    ]);
    expect(top.every((d, i) => i === 0 || top[i - 1]!.count >= d.count)).toBe(true);
  });

  it('keeps at most maxProjects, dropping the project seen first', () => {
    const { stats } = setup(3);
    for (const p of ['p1', 'p2', 'p3']) stats.record(p, counts(1), { 'text_truncated/warning': 1 });
    stats.record('p4', counts(1), {});
    expect(stats.get('p1').totals.accepted).toBe(0);
    expect(stats.get('p1').topDiagnostics).toEqual([]);
    expect(['p2', 'p3', 'p4'].map((p) => stats.get(p).totals.accepted)).toEqual([1, 1, 1]);
    expect((stats as unknown as { projects: Map<string, unknown> }).projects.size).toBe(3);
    // A known project is updated in place, not evicted.
    stats.record('p2', counts(1), {});
    expect(['p2', 'p3', 'p4'].map((p) => stats.get(p).totals.accepted)).toEqual([2, 1, 1]);
  });
});
