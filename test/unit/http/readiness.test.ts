import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Readiness, type ReadyState } from '../../../src/http/readiness.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Readiness', () => {
  it('reads the database once a second however often it is asked, and reports what it read', async () => {
    let calls = 0;
    let next: ReadyState = 'ready';
    const r = new Readiness(async () => {
      calls++;
      return next;
    }, 1000);
    await r.refresh();
    for (let i = 0; i < 10_000; i++) expect(r.state).toBe('ready');
    expect(calls).toBe(1);
    next = 'migrations_pending';
    await vi.advanceTimersByTimeAsync(1000);
    expect([r.state, calls]).toEqual(['migrations_pending', 2]);
    r.stop();
  });

  it('a check that throws or hangs reads as database_unreachable', async () => {
    const hanging = new Readiness(() => new Promise<ReadyState>(() => undefined), 1000);
    const settled = hanging.refresh();
    await vi.advanceTimersByTimeAsync(1000);
    await settled;
    expect(hanging.state).toBe('database_unreachable');
    hanging.stop();
    const failing = new Readiness(async () => {
      throw new Error('down');
    }, 1000);
    await failing.refresh();
    expect(failing.state).toBe('database_unreachable');
    failing.stop();
  });
});
