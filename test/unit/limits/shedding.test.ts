import { describe, expect, it } from 'vitest';
import { LoadShedder } from '../../../src/limits/shedding.js';

function shedder() {
  // `inHand` null: the writer holds requests exactly when some wait (delay > 0).
  const s = { delay: 0, loop: 0, now: 0, shed: 0, heavy: new Set<string>(), inHand: null as boolean | null };
  const l = new LoadShedder(
    {
      queueDelayMs: () => s.delay,
      inHand: () => s.inHand ?? s.delay > 0,
      loopDelayMs: () => s.loop,
      holdsShare: (projectId) => s.heavy.has(projectId),
    },
    50,
    () => s.shed++,
    () => s.now,
  );
  return {
    s,
    shedding: (projectId: string | null = null, keyed = projectId !== null) => l.refusal(projectId, keyed) !== null,
  };
}

describe('LoadShedder', () => {
  it('lets a moment over the bound pass; sheds once arrivals have found the delay over it for 100 ms', () => {
    const { s, shedding } = shedder();
    s.delay = 50;
    expect(shedding()).toBe(false);
    s.delay = 400;
    expect(shedding()).toBe(false);
    s.now = 99;
    expect(shedding()).toBe(false);
    // One arrival under the bound restarts the clock.
    s.delay = 40;
    expect(shedding()).toBe(false);
    s.delay = 60;
    s.now = 150;
    expect(shedding()).toBe(false);
    s.now = 250;
    expect(shedding()).toBe(true);
    expect(s.shed).toBe(1);
    const r = new LoadShedder(
      { queueDelayMs: () => 200, inHand: () => true, loopDelayMs: () => 0, holdsShare: () => true },
      50,
    );
    r.refusal();
    const later = performance.now() + 100;
    while (performance.now() < later);
    expect(r.refusal()?.status).toBe(503);
    expect(r.refusal()?.code).toBe('overloaded');
    expect(r.refusal()?.retryAfterS).toBe(1);
  });

  it('starts the clock again after a quiet second: two arrivals over the bound seconds apart are not 100 ms over it', () => {
    const { s, shedding } = shedder();
    s.delay = 200;
    expect(shedding()).toBe(false);
    s.now = 1001;
    expect(shedding()).toBe(false);
    s.now = 1051;
    expect(shedding()).toBe(false);
    s.now = 1101;
    expect(shedding()).toBe(true);
  });

  it('keeps shedding down to the bound, stops at it, and starts again at once within a second', () => {
    const { s, shedding } = shedder();
    s.delay = 200;
    shedding();
    s.now = 100;
    expect(shedding()).toBe(true);
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 50;
    expect(shedding()).toBe(false);
    s.now = 1099;
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 10;
    s.now = 1100;
    expect(shedding()).toBe(false);
    // A second later the backlog is taken to be gone: a moment over the bound passes again.
    s.now = 2100;
    s.delay = 60;
    expect(shedding()).toBe(false);
  });

  it("while shedding, lets in a project holding less than an equal share: one tenant's backlog sheds that tenant", () => {
    const { s, shedding } = shedder();
    s.delay = 200;
    s.heavy.add('heavy');
    shedding('heavy');
    s.now = 100;
    expect(shedding('heavy')).toBe(true);
    expect(shedding('light')).toBe(false);
    // A project not known from memory (a webapp body not yet read, a key not cached) is shed.
    expect(shedding(null)).toBe(true);
    expect(s.shed).toBe(2);
    s.delay = 10;
    expect(shedding('heavy')).toBe(false);
  });

  it("counts the loop's delay only with work in hand, and against requests of a known project only", () => {
    const { s, shedding } = shedder();
    s.heavy.add('heavy');
    // Late with nothing in hand: nobody is shed.
    s.loop = 500;
    shedding('heavy');
    s.now = 100;
    expect(shedding('heavy')).toBe(false);
    // With work in hand, the writer's delay and the loop's together are over the bound.
    s.delay = 20;
    shedding('heavy');
    s.now = 200;
    expect(shedding('heavy')).toBe(true);
    // A request of no known project is judged by the writer alone (an unauthenticated flood can make the loop late).
    expect(shedding(null)).toBe(false);
    s.delay = 60;
    expect(shedding(null)).toBe(true);
  });

  it("counts the loop's delay in proportion to the keyed arrivals of a known project: made-up keys shed no tenant", () => {
    const { s, shedding } = shedder();
    s.heavy.add('heavy');
    s.inHand = true;
    s.loop = 100;
    // A tenant's requests among forty times as many keys of no known project (made-up keys refused from memory).
    for (let t = 0; t < 1000; t++) {
      s.now = t;
      if (t % 40 === 0) expect(shedding('heavy')).toBe(false);
      else expect(shedding(null, true)).toBe(false);
    }
    // Webapp arrivals (no key) do not count either way: among them, the tenant's backlog is the tenant's own.
    for (let t = 3000; t < 4200; t++) {
      s.now = t;
      if (t % 40 === 0) shedding('heavy');
      else expect(shedding(null, false)).toBe(false);
    }
    expect(shedding('heavy')).toBe(true);
  });

  it("counts the loop's delay while commits are under way though no request waits for one", () => {
    const { s, shedding } = shedder();
    s.heavy.add('heavy');
    s.inHand = true;
    s.loop = 80;
    shedding('heavy');
    s.now = 100;
    expect(shedding('heavy')).toBe(true);
    s.inHand = false;
    expect(shedding('heavy')).toBe(false);
  });
});
