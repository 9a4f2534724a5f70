import { describe, expect, it } from 'vitest';
import { RecentUsers } from '../../../src/writer/recent-users.js';

const WINDOW = 10_000;
const P = 'project-1';
const Q = 'project-2';

function setup(maxEntries = 1000) {
  let t = 5_000;
  const users = new RecentUsers(WINDOW, maxEntries, () => t);
  return { users, advance: (ms: number) => { t += ms; } };
}

describe('RecentUsers', () => {
  it('knows a user written within the window, per project', () => {
    const { users, advance } = setup();
    users.tick();
    expect(users.fresh(P, '42')).toBe(false);
    users.remember(P, '42');
    expect(users.fresh(P, '42')).toBe(true);
    expect(users.fresh(Q, '42')).toBe(false);
    expect(users.fresh(P, '43')).toBe(false);
    advance(WINDOW - 1);
    users.tick();
    expect(users.fresh(P, '42')).toBe(true);
  });

  it('after one window the previous generation still answers; two windows later the user is forgotten', () => {
    const { users, advance } = setup();
    users.remember(P, '42');
    advance(WINDOW);
    users.tick(); // rotation: 42 is in the previous generation
    expect(users.fresh(P, '42')).toBe(true);
    users.remember(P, '7');
    advance(WINDOW);
    users.tick(); // 42 is dropped, 7 moves to the previous generation
    expect(users.fresh(P, '42')).toBe(false);
    expect(users.fresh(P, '7')).toBe(true);
  });

  it('rotates only on tick(): lookups between ticks see the same generations', () => {
    const { users, advance } = setup();
    users.remember(P, '42');
    advance(3 * WINDOW);
    expect(users.fresh(P, '42')).toBe(true);
    users.tick();
    expect(users.fresh(P, '42')).toBe(true);
    users.tick(); // within the window of the last rotation: nothing changes
    expect(users.fresh(P, '42')).toBe(true);
    advance(WINDOW);
    users.tick();
    expect(users.fresh(P, '42')).toBe(false);
  });

  it('a user seen again is carried into the current generation', () => {
    const { users, advance } = setup();
    users.remember(P, '42');
    advance(WINDOW);
    users.tick();
    users.remember(P, '42');
    advance(WINDOW);
    users.tick();
    expect(users.fresh(P, '42')).toBe(true);
  });

  it('with a fingerprint, is fresh only for the same profile', () => {
    const { users, advance } = setup();
    users.remember(P, '42', 'Ada|Lovelace|en');
    expect(users.fresh(P, '42', 'Ada|Lovelace|en')).toBe(true);
    expect(users.fresh(P, '42', 'Ada|King|en')).toBe(false);
    expect(users.fresh(P, '42')).toBe(true);
    // A bare sighting (no profile) is remembered with the empty fingerprint.
    users.remember(P, '43');
    expect(users.fresh(P, '43', '')).toBe(true);
    expect(users.fresh(P, '43', 'Bob')).toBe(false);
    // The newest profile replaces the older one; the previous generation answers with what it held.
    advance(WINDOW);
    users.tick();
    expect(users.fresh(P, '42', 'Ada|Lovelace|en')).toBe(true);
    users.remember(P, '42', 'Ada|King|en');
    expect(users.fresh(P, '42', 'Ada|King|en')).toBe(true);
    expect(users.fresh(P, '42', 'Ada|Lovelace|en')).toBe(false);
  });

  it('rotates early once maxEntries users are remembered, so memory stays bounded', () => {
    const { users } = setup(3);
    users.remember(P, '1');
    users.remember(P, '2');
    users.remember(Q, '1');
    users.remember(P, '1'); // already counted
    users.tick(); // full: rotates although the window has not passed
    users.remember(P, '4');
    users.remember(P, '5');
    users.tick(); // 2 of 3: no rotation
    expect(['1', '2', '4', '5'].map((u) => users.fresh(P, u))).toEqual([true, true, true, true]);
    expect(users.fresh(Q, '1')).toBe(true);
    users.remember(P, '6');
    users.tick(); // full again: the first generation is dropped
    expect(['1', '2', '4', '5', '6'].map((u) => users.fresh(P, u))).toEqual([false, false, true, true, true]);
    expect(users.fresh(Q, '1')).toBe(false);
  });

  it('counts distinct users toward maxEntries, not sightings', () => {
    const { users } = setup(3);
    for (let i = 0; i < 100; i++) users.remember(P, '1', String(i));
    users.tick(); // one user: no rotation
    users.remember(P, '2');
    users.remember(P, '3');
    users.tick(); // three: rotation, {1, 2, 3} become the previous generation
    users.remember(P, '4');
    users.tick(); // one: no rotation, so 1 is still known
    expect(['1', '2', '3', '4'].map((u) => users.fresh(P, u))).toEqual([true, true, true, true]);
    expect(users.fresh(P, '1', '99')).toBe(true);
    expect(users.fresh(P, '1', '98')).toBe(false);
  });
});
