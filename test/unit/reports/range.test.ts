// Report ranges and CSV: what a request may ask and how the numbers leave.
import { describe, expect, it } from 'vitest';
import { dayRange, daysOf, MAX_REPORT_DAYS, toCsv } from '../../../src/reports/range.js';

const today = new Date('2026-11-24T15:00:00Z');
const q = (s: string) => new URLSearchParams(s);

describe('dayRange', () => {
  it('defaults to the days ending today, or to every day when the report allows it', () => {
    expect(dayRange(q(''), today, 30)).toEqual({ ok: true, range: { from: '2026-10-26', to: '2026-11-24' } });
    expect(dayRange(q(''), today, null)).toBeNull();
    expect(dayRange(q('to=2026-01-10'), today, 7)).toEqual({
      ok: true,
      range: { from: '2026-01-04', to: '2026-01-10' },
    });
  });

  it(`accepts up to ${MAX_REPORT_DAYS} days and refuses more, a reversed range and dates that are not dates`, () => {
    expect(dayRange(q('from=2024-01-01&to=2024-12-31'), today, 30)).toMatchObject({ ok: true }); // 366 days, leap year
    expect(dayRange(q('from=2025-01-01&to=2026-01-02'), today, 30)).toMatchObject({ ok: false });
    expect(dayRange(q('from=2026-11-02&to=2026-11-01'), today, 30)).toEqual({ ok: false, message: 'from is after to' });
    for (const bad of ['2026-02-30', '2026-1-01', '20261101', '2026-11-01T00:00:00Z', ''])
      expect(dayRange(q(`from=${bad}&to=2026-11-01`), today, 30), bad).toMatchObject({ ok: false });
  });

  it('lists every day across month and year ends', () => {
    expect(daysOf({ from: '2026-12-30', to: '2027-01-02' })).toEqual([
      '2026-12-30',
      '2026-12-31',
      '2027-01-01',
      '2027-01-02',
    ]);
  });
});

describe('toCsv', () => {
  it('quotes what needs it and defuses cells a spreadsheet would run as formulas; integers stay numbers', () => {
    const csv = toCsv(
      ['a', 'b'],
      [
        ['x,y', 'say "hi"'],
        ['=1+1', 5],
        [null, '-3'],
        ['-1+2', '@x'],
      ],
    );
    expect(csv.split('\r\n')).toEqual(['a,b', '"x,y","say ""hi"""', "'=1+1,5", ',-3', "'-1+2,'@x", '']);
  });
});
