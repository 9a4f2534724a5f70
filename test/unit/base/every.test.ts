// The schedule of background jobs (the reports' aggregator, the lake's exporter): a run at start, the next `everyMs`
// after each run ends or as soon as the run says, never two at once, failures counted in a row, and nothing after
// stop().
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Every } from '../../../src/base/every.js';

/** A task whose runs the test ends by hand. */
function task() {
  const runs: { end: () => void; fail: (e: Error) => void }[] = [];
  const run = () =>
    new Promise<void>((resolve, reject) => {
      runs.push({ end: resolve, fail: reject });
    });
  return { runs, run };
}

describe('Every', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs at start, then everyMs after each run ends, never two at once', async () => {
    const t = task();
    const every = new Every(1000, t.run, () => undefined);
    every.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.runs).toHaveLength(1);
    // A run that lasts 5 s holds the next one back.
    await vi.advanceTimersByTimeAsync(5000);
    expect(t.runs).toHaveLength(1);
    t.runs[0]!.end();
    await vi.advanceTimersByTimeAsync(999);
    expect(t.runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.runs).toHaveLength(2);
    t.runs[1]!.end();
    await every.stop();
  });

  it('comes again as soon as a run says, when it returns a delay', async () => {
    const delays = [250];
    let runs = 0;
    const every = new Every(
      1000,
      async () => {
        runs++;
        return delays.shift();
      },
      () => undefined,
    );
    every.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    // The first run asked for the next in 250 ms, the second for nothing: everyMs after it.
    await vi.advanceTimersByTimeAsync(249);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(999);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(3);
    await every.stop();
  });

  it('counts failures in a row, from one again after a run that passes, and goes on', async () => {
    const t = task();
    const failed: number[] = [];
    const every = new Every(100, t.run, (_err, n) => failed.push(n));
    every.start();
    for (const outcome of ['fail', 'fail', 'end', 'fail'] as const) {
      await vi.advanceTimersByTimeAsync(100);
      const r = t.runs.at(-1)!;
      if (outcome === 'fail') r.fail(new Error('lock held'));
      else r.end();
    }
    await vi.advanceTimersByTimeAsync(100);
    expect(failed).toEqual([1, 2, 1]);
    expect(t.runs).toHaveLength(5);
    t.runs[4]!.end();
    await every.stop();
  });

  it('stop() waits for the run under way and starts none after it', async () => {
    const t = task();
    const every = new Every(100, t.run, () => undefined);
    every.start();
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = every.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(50);
    expect(stopped).toBe(false);
    t.runs[0]!.end();
    await stopping;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(t.runs).toHaveLength(1);
  });

  it('stop() between runs clears the one scheduled', async () => {
    const t = task();
    const every = new Every(100, t.run, () => undefined);
    every.start();
    await vi.advanceTimersByTimeAsync(0);
    t.runs[0]!.end();
    await vi.advanceTimersByTimeAsync(10);
    await every.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(t.runs).toHaveLength(1);
  });
});
