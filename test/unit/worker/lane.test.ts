import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PoolOverloaded } from '../../../src/worker/errors.js';
import { Lane } from '../../../src/worker/pool.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A task that runs until `done()` is called; `order` records when each started. */
function tasks(order: string[]) {
  const gates = new Map<string, () => void>();
  return {
    task: (name: string) => () =>
      new Promise<string>((resolve) => {
        order.push(name);
        gates.set(name, () => resolve(name));
      }),
    done: async (name: string) => {
      gates.get(name)!();
      await vi.advanceTimersByTimeAsync(0);
    },
  };
}

describe('Lane', () => {
  it('runs at most its concurrency, serves the low-priority queue one turn in four, and bounds each queue', async () => {
    const order: string[] = [];
    const t = tasks(order);
    const lane = new Lane(1, { normal: 10, low: 2 });
    const running = [lane.run('normal', t.task('n0'))];
    for (let i = 1; i <= 6; i++) running.push(lane.run('normal', t.task(`n${i}`)));
    running.push(lane.run('low', t.task('l1')), lane.run('low', t.task('l2')));
    await expect(lane.run('low', t.task('l3'))).rejects.toBeInstanceOf(PoolOverloaded);
    expect(order).toEqual(['n0']);
    for (const name of ['n0', 'n1', 'n2', 'n3', 'l1', 'n4', 'n5', 'n6', 'l2'])
      if (order.includes(name)) await t.done(name);
    expect(order).toEqual(['n0', 'n1', 'n2', 'n3', 'l1', 'n4', 'n5', 'n6', 'l2']);
    await Promise.all(running);
  });

  it('refuses a task that waited past its bound; a normal task that is not admitted waits as a low one', async () => {
    const order: string[] = [];
    const t = tasks(order);
    const lane = new Lane(1, { normal: 10, low: 10 });
    const first = lane.run('normal', t.task('a'));
    const late = lane.run('normal', t.task('b'));
    late.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(3000);
    await expect(late).rejects.toBeInstanceOf(PoolOverloaded);
    const waiting = lane.run('normal', t.task('c'));
    const demoted = lane.run('normal', t.task('d'), () => false);
    await t.done('a');
    await t.done('c');
    expect(order).toEqual(['a', 'c', 'd']);
    await t.done('d');
    await Promise.all([first, waiting, demoted]);
  });
});
