import { describe, expect, it } from 'vitest';
import { RecentSightings } from '../../../src/writer/recent-sightings.js';

const WINDOW = 60_000;
const P = '6f1c0e1a-0000-4000-8000-000000000001';
const Q = '6f1c0e1a-0000-4000-8000-000000000002';

function setup(capacity = 1024) {
  let t = 1_000;
  const cache = new RecentSightings(WINDOW, capacity, () => t);
  const seen = {
    remember: (projectId: string, userId: string) => cache.remember(projectId, userId),
    fresh: (projectId: string, userId: string) => cache.freshIn(cache.project(projectId), userId, cache.seconds()),
  };
  return {
    seen,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('RecentSightings', () => {
  it('knows a user written within the window, per project, and forgets it after the window', () => {
    const { seen, advance } = setup();
    expect(seen.fresh(P, '42')).toBe(false);
    seen.remember(P, '42');
    expect(seen.fresh(P, '42')).toBe(true);
    expect(seen.fresh(Q, '42')).toBe(false);
    expect(seen.fresh(P, '43')).toBe(false);
    advance(WINDOW - 1);
    expect(seen.fresh(P, '42')).toBe(true);
    advance(1);
    expect(seen.fresh(P, '42')).toBe(false);
    seen.remember(P, '42');
    expect(seen.fresh(P, '42')).toBe(true);
  });

  it('never calls fresh a user it was not told about, however full it is', () => {
    const { seen } = setup(64);
    const remembered = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const id = String(100_000_000 + ((i * 7919) % 1_000_000));
      seen.remember(i % 3 === 0 ? Q : P, id);
      if (i % 3 !== 0) remembered.add(id);
    }
    let fresh = 0;
    for (let i = 0; i < 20_000; i++) {
      const id = String(100_000_000 + i * 13);
      if (seen.fresh(P, id)) {
        expect(remembered.has(id)).toBe(true);
        fresh++;
      }
    }
    // 64 slots: at most 64 users are known at once.
    expect(fresh).toBeLessThanOrEqual(64);
  });

  it('keeps no user id past 2^53 (those rows are written again), and tells apart ids that differ in the last digit', () => {
    const { seen } = setup();
    seen.remember(P, '9007199254740993');
    expect(seen.fresh(P, '9007199254740993')).toBe(false);
    seen.remember(P, '9007199254740991');
    expect(seen.fresh(P, '9007199254740991')).toBe(true);
    expect(seen.fresh(P, '9007199254740990')).toBe(false);
  });
});
