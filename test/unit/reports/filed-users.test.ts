// The aggregator's memory of which users the report tables file on which days: dropped whole when the tables are
// not as its last fold left them, bounded in users (a project past an equal share turning its own over) and days.
import { describe, expect, it } from 'vitest';
import { FiledUsers } from '../../../src/reports/filed-users.js';

const P1 = '11111111-2222-4333-8444-555555555555';
const P2 = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';

describe('FiledUsers', () => {
  it('forgets everything when the report tables are not as its last fold left them', () => {
    const filed = new FiledUsers();
    filed.check('1000 0');
    filed.add(P1, 1, [10]);
    filed.settle('2000 0');
    filed.check('2000 0');
    expect(filed.holds(P1, 1, [10])).toBe(true);
    // Changed by an erasure (the count), or folded by another instance (the watermark).
    filed.check('2000 1');
    expect(filed.holds(P1, 1, [10])).toBe(false);
    filed.add(P1, 1, [10]);
    filed.settle('3000 1');
    filed.check('4000 1');
    expect(filed.size).toBe(0);
    expect(filed.stats).toEqual({ hits: 1, misses: 1 });
  });

  it('keeps the latest days of a user, and room for another project from the least recently folded of the largest', () => {
    const filed = new FiledUsers();
    filed.add(P1, 1, [1, 2, 3]);
    filed.add(P1, 1, [4, 5]);
    expect(filed.holds(P1, 1, [2, 3, 4, 5])).toBe(true);
    expect(filed.holds(P1, 1, [1])).toBe(false);
    for (let u = 2; u <= 100_000; u++) filed.add(P1, u, [1]);
    expect(filed.size).toBe(100_000);
    // Folded again: the most recent now.
    filed.add(P1, 1, [5]);
    // Another project's users push out the least recently folded, P1's user 2 then 3.
    filed.add(P2, 1, [1]);
    filed.add(P2, 2, [1]);
    expect(filed.size).toBe(100_000);
    expect(filed.holds(P1, 2, [1])).toBe(false);
    expect(filed.holds(P1, 3, [1])).toBe(false);
    expect(filed.holds(P1, 4, [1])).toBe(true);
    expect(filed.holds(P1, 1, [5])).toBe(true);
    expect(filed.holds(P2, 1, [1]) && filed.holds(P2, 2, [1])).toBe(true);
  });

  it('makes room full by turning over the users of a project past an equal share, not those of the others', () => {
    const filed = new FiledUsers();
    const P3 = '99999999-8888-4777-8666-555555555555';
    for (let u = 1; u <= 1_000; u++) filed.add(P2, u, [1]);
    for (let u = 1; u <= 99_000; u++) filed.add(P1, u, [1]);
    expect(filed.size).toBe(100_000);
    // P1 comes back with 50,000 users more than the memory has room for: its least recently folded make the room.
    for (let u = 99_001; u <= 149_000; u++) filed.add(P1, u, [1]);
    expect(filed.size).toBe(100_000);
    for (const u of [1, 500, 1_000]) expect(filed.holds(P2, u, [1])).toBe(true);
    expect(filed.holds(P1, 50_000, [1])).toBe(false);
    expect(filed.holds(P1, 50_001, [1])).toBe(true);
    // A third project under its share takes room from the one holding the most (P1's least recently folded).
    for (let u = 1; u <= 10; u++) filed.add(P3, u, [1]);
    expect(filed.size).toBe(100_000);
    expect(filed.holds(P3, 10, [1]) && filed.holds(P2, 1_000, [1])).toBe(true);
    expect(filed.holds(P1, 50_010, [1])).toBe(false);
    expect(filed.holds(P1, 50_011, [1])).toBe(true);
  });

  it('takes room from whichever project holds the most, so that projects end near equal shares', () => {
    const filed = new FiledUsers();
    const P3 = '99999999-8888-4777-8666-555555555555';
    for (let u = 1; u <= 50_000; u++) filed.add(P1, u, [1]);
    for (let u = 1; u <= 50_000; u++) filed.add(P2, u, [1]);
    for (let u = 1; u <= 33_333; u++) filed.add(P3, u, [1]);
    const held = (p: string, to: number) => {
      let n = 0;
      for (let u = 1; u <= to; u++) if (filed.holds(p, u, [1])) n++;
      return n;
    };
    expect([held(P1, 50_000), held(P2, 50_000), held(P3, 33_333)]).toEqual([33_333, 33_334, 33_333]);
  });

  it('takes room from the project holding the most once the one that held more is forgotten', () => {
    const filed = new FiledUsers();
    const [P3, P4, P5, P6, P7] = [3, 4, 5, 6, 7].map((n) => `${n}0000000-0000-4000-8000-000000000000`);
    const fill = (p: string, to: number) => {
      for (let u = 1; u <= to; u++) filed.add(p, u, [1]);
    };
    fill(P1, 60_000);
    fill(P2, 25_000);
    fill(P3, 15_000);
    filed.forgetProjects([P1]);
    for (const p of [P4, P5, P6]) fill(p, 20_000);
    expect(filed.size).toBe(100_000);
    // P2 holds the most now (25,000): its least recently folded user makes room.
    filed.add(P7, 1, [1]);
    expect(filed.size).toBe(100_000);
    expect(filed.holds(P2, 1, [1])).toBe(false);
    expect([P2, P3, P4, P5, P6].every((p) => filed.holds(p, 2, [1]))).toBe(true);
    expect(filed.holds(P1, 2, [1])).toBe(false);
  });

  it('takes room from the project holding the most once the one that held more lost users one by one', () => {
    const filed = new FiledUsers();
    const [P3, P4, P5] = [3, 4, 5].map((n) => `${n}0000000-0000-4000-8000-000000000000`);
    const fill = (p: string, from: number, to: number) => {
      for (let u = from; u <= to; u++) filed.add(p, u, [1]);
    };
    fill(P1, 1, 30_000);
    fill(P2, 1, 25_000);
    fill(P3, 1, 25_000);
    fill(P4, 1, 20_000);
    for (let u = 1; u <= 10_000; u++) filed.forget(P1, u);
    fill(P5, 1, 10_001);
    expect(filed.size).toBe(100_000);
    // P1 now holds 20,000: the room came from P2 or P3 (25,000 each), one user, their least recently folded.
    expect(filed.holds(P1, 10_001, [1])).toBe(true);
    expect([P2, P3].filter((p) => !filed.holds(p, 1, [1]))).toHaveLength(1);
    expect([P2, P3].every((p) => filed.holds(p, 2, [1]))).toBe(true);
  });

  it("forgets the users of the projects named, and keeps the others'", () => {
    const filed = new FiledUsers();
    const P3 = '99999999-8888-4777-8666-555555555555';
    for (let u = 1; u <= 30_000; u++) for (const p of [P1, P2, P3]) filed.add(p, u, [1]);
    filed.forgetProjects([P1, P3]);
    expect(filed.size).toBe(30_000);
    for (const u of [1, 15_000, 30_000]) {
      expect(filed.holds(P1, u, [1]) || filed.holds(P3, u, [1])).toBe(false);
      expect(filed.holds(P2, u, [1])).toBe(true);
    }
  });
});
