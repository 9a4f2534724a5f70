import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Tarpit } from '../../../src/http/tarpit.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A tarpit on the fake clock, and the answers it has sent so far, in order. */
function tarpit(delayMs: number, max: number): { pit: Tarpit; sent: string[]; hold(name: string): void } {
  const pit = new Tarpit({ delayMs, max }, () => Date.now());
  const sent: string[] = [];
  return { pit, sent, hold: (name) => pit.hold(() => sent.push(name)) };
}

describe('Tarpit', () => {
  it('sends each answer once its delay has passed, in the order held', () => {
    const t = tarpit(1000, 10);
    t.hold('a');
    vi.advanceTimersByTime(400);
    t.hold('b');
    expect([t.sent, t.pit.held]).toEqual([[], 2]);
    vi.advanceTimersByTime(599);
    expect(t.sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect([t.sent, t.pit.held]).toEqual([['a'], 1]);
    vi.advanceTimersByTime(400);
    expect([t.sent, t.pit.held]).toEqual([['a', 'b'], 0]);
  });

  it('sends at once when full, and holds again once there is room', () => {
    const t = tarpit(1000, 2);
    t.hold('a');
    t.hold('b');
    t.hold('c');
    expect([t.sent, t.pit.held]).toEqual([['c'], 2]);
    vi.advanceTimersByTime(1000);
    t.hold('d');
    expect([t.sent, t.pit.held]).toEqual([['c', 'a', 'b'], 1]);
    vi.advanceTimersByTime(1000);
    expect(t.sent).toEqual(['c', 'a', 'b', 'd']);
  });

  it('holds nothing with a delay of 0', () => {
    const t = tarpit(0, 10);
    t.hold('a');
    expect([t.sent, t.pit.held]).toEqual([['a'], 0]);
  });

  it('on release sends everything held at once, and holds nothing after', () => {
    const t = tarpit(60_000, 10);
    t.hold('a');
    t.hold('b');
    t.pit.release();
    expect([t.sent, t.pit.held]).toEqual([['a', 'b'], 0]);
    t.hold('c');
    expect(t.sent).toEqual(['a', 'b', 'c']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an answer that fails to send keeps none of the others waiting', () => {
    const t = tarpit(1000, 10);
    t.pit.hold(() => {
      throw new Error('the connection is gone');
    });
    t.hold('b');
    vi.advanceTimersByTime(1000);
    expect([t.sent, t.pit.held]).toEqual([['b'], 0]);
  });

  it('keeps memory to what is held over a long run', () => {
    const t = tarpit(10, 1_000_000);
    for (let i = 0; i < 5000; i++) {
      t.hold(String(i));
      vi.advanceTimersByTime(1);
    }
    vi.advanceTimersByTime(10);
    expect([t.sent.length, t.pit.held]).toEqual([5000, 0]);
    expect((t.pit as unknown as { queue: unknown[] }).queue.length).toBe(0);
  });
});
