import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeDate } from '../../../src/pipeline/dates.js';

describe('normalizeDate', () => {
  it.each([
    ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00Z'],
    ['2026-11-22t10:00:00z', '2026-11-22T10:00:00Z'],
    ['2026-11-22 10:00:00', '2026-11-22T10:00:00Z'],
    ['2026-11-22T10:00', '2026-11-22T10:00:00Z'],
    ['2026-11-22T10:00:00.123456789+03:00', '2026-11-22T10:00:00.123456+03:00'],
    ['2026-11-22T10:00:00,5-0530', '2026-11-22T10:00:00.5-05:30'],
    ['2026-11-22T10:00:00+14', '2026-11-22T10:00:00+14:00'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00Z'],
    ['9999-12-31T23:59:59.999999Z', '9999-12-31T23:59:59.999999Z'],
  ])('accepts %s', (input, out) => {
    expect(normalizeDate(input)).toBe(out);
  });

  it.each([
    '',
    '2026-11-22',
    '22/11/2026 10:00',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2026-11-22T24:00:00Z',
    '2026-11-22T10:60:00Z',
    '2026-11-22T10:00:60Z',
    '0000-01-01T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '10000-01-01T00:00:00Z',
    '2026-11-22T10:00:00+15:00',
    '2026-11-22T10:00:00+14:30',
    'now',
    '2026-11-22T10:00:00Z\n',
    `2026-11-22T10:00:00.${'1'.repeat(40)}Z`,
  ])('refuses %j', (input) => {
    expect(normalizeDate(input)).toBeNull();
  });
});

describe('normalizeDate: the canonical UTC form', () => {
  // Such strings are checked by a fast path; the same string with a lowercase "t" takes the
  // general one. Both must agree on every value, valid or not.
  const digits = (n: number) =>
    fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));
  const canonical = fc
    .tuple(
      digits(4),
      digits(2),
      digits(2),
      digits(2),
      digits(2),
      digits(2),
      fc.integer({ min: 0, max: 7 }).chain((k) => digits(k)),
    )
    .map(([y, mo, d, h, mi, s, frac]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${frac === '' ? '' : `.${frac}`}Z`);
  const plausible = fc
    .tuple(
      fc.integer({ min: 1, max: 9999 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 1, max: 31 }),
      fc.integer({ min: 0, max: 24 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 999 }),
    )
    .map(
      ([y, mo, d, h, mi, s, ms]) =>
        `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(mi).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(ms).padStart(3, '0')}Z`,
    );

  it('agrees with the general path, digit for digit', () => {
    fc.assert(
      fc.property(fc.oneof(canonical, plausible), (s) => {
        expect(normalizeDate(s)).toBe(normalizeDate(s.replace('T', 't')));
      }),
      { numRuns: 5000 },
    );
  });

  it('returns what toISOString() prints as it is', () => {
    for (const t of [0, 951_782_400_000, 1_763_800_000_123, -62_135_596_800_000]) {
      const iso = new Date(t).toISOString();
      expect(normalizeDate(iso)).toBe(iso);
    }
  });
});
