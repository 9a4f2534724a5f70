import { describe, expect, it } from 'vitest';
import { LoadShedder } from '../../../src/limits/shedding.js';

function shedder() {
  const s = { delay: 0, now: 0, shed: 0, heavy: new Set<string>() };
  const l = new LoadShedder(
    () => s.delay,
    50,
    (projectId) => s.heavy.has(projectId),
    () => s.shed++,
    () => s.now,
  );
  return { s, shedding: (projectId: string | null = null) => l.refusal(projectId) !== null };
}

describe('LoadShedder', () => {
  it('lets a moment over the bound pass; sheds once the delay is 100 ms past it', () => {
    const { s, shedding } = shedder();
    s.delay = 50;
    expect(shedding()).toBe(false);
    s.delay = 149;
    expect(shedding()).toBe(false);
    s.delay = 151;
    expect(shedding()).toBe(true);
    expect(s.shed).toBe(1);
    const r = new LoadShedder(() => 200, 50).refusal();
    expect(r?.status).toBe(503);
    expect(r?.code).toBe('overloaded');
    expect(r?.retryAfterS).toBe(1);
  });

  it('keeps shedding down to the bound, stops at it, and starts again at the bound within a second', () => {
    const { s, shedding } = shedder();
    s.delay = 200;
    expect(shedding()).toBe(true);
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 50;
    expect(shedding()).toBe(false);
    s.now = 999;
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 10;
    expect(shedding()).toBe(false);
    // A second later the backlog is taken to be gone: a moment over the bound passes again.
    s.now = 2000;
    s.delay = 60;
    expect(shedding()).toBe(false);
  });

  it("while shedding, lets in a project holding less than an equal share: one tenant's backlog sheds that tenant", () => {
    const { s, shedding } = shedder();
    s.delay = 200;
    s.heavy.add('heavy');
    expect(shedding('heavy')).toBe(true);
    expect(shedding('light')).toBe(false);
    // A project not known from memory (a webapp body not yet read, a key not cached) is shed.
    expect(shedding(null)).toBe(true);
    expect(s.shed).toBe(2);
    s.delay = 10;
    expect(shedding('heavy')).toBe(false);
  });
});
