import { describe, expect, it } from 'vitest';
import { Distinct, EXACT_MAX, SPARSE_MAX } from '../../../src/reports/sketch.js';

// 52-bit hashes as PostgreSQL's HASH_SQL gives them: well mixed, here from a seeded generator.
function hashes(n: number, seed: number): number[] {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return Array.from({ length: n }, () => (next() % 2 ** 20) * 2 ** 32 + next());
}

const sketchOf = (hs: number[]) => {
  const d = new Distinct();
  for (const h of hs) d.addHash(h);
  return d.encode();
};

describe('Distinct', () => {
  it('counts exactly while the users are few, across stored sketches and repeats', () => {
    const a = hashes(300, 1);
    const b = hashes(300, 2);
    const u = new Distinct();
    u.addSketch(sketchOf(a));
    u.addSketch(sketchOf([...b, ...a.slice(0, 100)]));
    u.addSketch(sketchOf(a));
    expect(u.count()).toBe(600);
    expect(sketchOf(a).length).toBe(1 + 8 * 300);
  });

  it('stores more than SPARSE_MAX users in a fixed size and still counts a union exactly up to EXACT_MAX', () => {
    const days = Array.from({ length: 8 }, (_, i) => hashes(1000, 10 + i));
    const stored = days.map(sketchOf);
    expect(stored[0]!.length).toBe(1 + 4096);
    expect(sketchOf(hashes(SPARSE_MAX, 3)).length).toBe(1 + 8 * SPARSE_MAX);
    const u = new Distinct();
    for (const s of stored) u.addSketch(s);
    // Dense sketches: an estimate, within 4 standard errors.
    expect(Math.abs(u.count() - 8000) / 8000).toBeLessThan(0.065);
    const exact = new Distinct();
    for (const d of days) for (const h of d) exact.addHash(h);
    expect(exact.count()).toBe(8000);
    expect(EXACT_MAX).toBeGreaterThanOrEqual(8000);
  });

  it('estimates large unions within a few standard errors (1.6%), unbiased from small to millions', () => {
    for (const n of [10_000, 40_000, 300_000, 2_000_000]) {
      const parts = [0, 1, 2, 3].map((k) => sketchOf(hashes(n / 2, 100 + k + n)));
      const u = new Distinct();
      // Two halves, each added twice: duplicates never count.
      for (const p of [...parts.slice(0, 2), ...parts.slice(0, 2)]) u.addSketch(p);
      expect(Math.abs(u.count() - n) / n).toBeLessThan(0.065);
    }
  });

  it('adds nothing from bytes it could not have written', () => {
    const u = new Distinct();
    const good = sketchOf(hashes(3, 5));
    expect(u.addSketch(good.subarray(0, 5))).toBe(false);
    expect(u.addSketch(Uint8Array.of(1, 2, 3))).toBe(false);
    expect(u.addSketch(Uint8Array.of(7))).toBe(false);
    const nan = new Uint8Array(9);
    new DataView(nan.buffer).setFloat64(1, Number.NaN, true);
    expect(u.addSketch(nan)).toBe(false);
    expect(u.count()).toBe(0);
    expect(u.addSketch(good)).toBe(true);
    expect(u.count()).toBe(3);
  });

  it('counts nobody as zero', () => {
    expect(new Distinct().count()).toBe(0);
    const u = new Distinct(0);
    expect(u.count()).toBe(0);
  });
});
