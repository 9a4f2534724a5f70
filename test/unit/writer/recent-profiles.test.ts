import { describe, expect, it } from 'vitest';
import { RecentProfiles } from '../../../src/writer/recent-profiles.js';

const WINDOW = 10_000;
const P = 'project-1';
const Q = 'project-2';
const ADA = 'Ada|Lovelace|en';

function setup(maxEntries = 1000) {
  let t = 5_000;
  const profiles = new RecentProfiles(WINDOW, maxEntries, () => t);
  return {
    profiles,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('RecentProfiles', () => {
  it('knows a profile written within the window, per project and user', () => {
    const { profiles, advance } = setup();
    profiles.tick();
    expect(profiles.fresh(P, '42', ADA)).toBe(false);
    profiles.remember(P, '42', ADA);
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    expect(profiles.fresh(Q, '42', ADA)).toBe(false);
    expect(profiles.fresh(P, '43', ADA)).toBe(false);
    advance(WINDOW - 1);
    profiles.tick();
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
  });

  it('is fresh only for the same profile; the newest replaces the older one', () => {
    const { profiles, advance } = setup();
    profiles.remember(P, '42', ADA);
    expect(profiles.fresh(P, '42', 'Ada|King|en')).toBe(false);
    advance(WINDOW);
    profiles.tick();
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    profiles.remember(P, '42', 'Ada|King|en');
    expect(profiles.fresh(P, '42', 'Ada|King|en')).toBe(true);
    expect(profiles.fresh(P, '42', ADA)).toBe(false);
  });

  it('after one window the previous generation still answers; two windows later the profile is forgotten', () => {
    const { profiles, advance } = setup();
    profiles.remember(P, '42', ADA);
    advance(WINDOW);
    profiles.tick(); // rotation: 42 is in the previous generation
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    profiles.remember(P, '7', ADA);
    advance(WINDOW);
    profiles.tick(); // 42 is dropped, 7 moves to the previous generation
    expect(profiles.fresh(P, '42', ADA)).toBe(false);
    expect(profiles.fresh(P, '7', ADA)).toBe(true);
  });

  it('rotates only on tick(): lookups between ticks see the same generations', () => {
    const { profiles, advance } = setup();
    profiles.remember(P, '42', ADA);
    advance(3 * WINDOW);
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    profiles.tick();
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    profiles.tick(); // within the window of the last rotation: nothing changes
    expect(profiles.fresh(P, '42', ADA)).toBe(true);
    advance(WINDOW);
    profiles.tick();
    expect(profiles.fresh(P, '42', ADA)).toBe(false);
  });

  it('rotates early once maxEntries users are remembered, counting users rather than writes', () => {
    const { profiles } = setup(3);
    for (let i = 0; i < 100; i++) profiles.remember(P, '1', String(i));
    profiles.tick(); // one user: no rotation
    profiles.remember(P, '2', ADA);
    profiles.remember(Q, '1', ADA);
    profiles.tick(); // three: rotation, they become the previous generation
    profiles.remember(P, '4', ADA);
    profiles.tick(); // one: no rotation
    expect([
      profiles.fresh(P, '1', '99'),
      profiles.fresh(P, '2', ADA),
      profiles.fresh(Q, '1', ADA),
      profiles.fresh(P, '4', ADA),
    ]).toEqual([true, true, true, true]);
    profiles.remember(P, '5', ADA);
    profiles.remember(P, '6', ADA);
    profiles.tick(); // full again: the first generation is dropped
    expect([
      profiles.fresh(P, '1', '99'),
      profiles.fresh(P, '2', ADA),
      profiles.fresh(P, '4', ADA),
      profiles.fresh(P, '6', ADA),
    ]).toEqual([false, false, true, true]);
  });
});
