import { describe, expect, it } from 'vitest';
import { batchLoader } from '../../../src/cache/batch-loader.js';

/** loadMany over a fixed table, every call's keys recorded. */
function table(rows: Record<string, number>) {
  const calls: string[][] = [];
  const loadMany = async (keys: string[]) => {
    calls.push(keys);
    return new Map(keys.filter((k) => k in rows).map((k) => [k, rows[k]!]));
  };
  return { calls, loadMany };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('batchLoader', () => {
  it('the keys asked in one event-loop turn share one loadMany call; unknown keys resolve to null', async () => {
    const t = table({ a: 1, b: 2 });
    const load = batchLoader(t.loadMany);
    const values = await Promise.all([load('a'), load('b'), load('zzz')]);
    expect(values).toEqual([1, 2, null]);
    expect(t.calls).toEqual([['a', 'b', 'zzz']]);
  });

  it('calls made across promise callbacks of the same turn still join the batch', async () => {
    const t = table({ a: 1, b: 2 });
    const load = batchLoader(t.loadMany);
    const first = load('a');
    const second = Promise.resolve().then(() => load('b'));
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(t.calls).toEqual([['a', 'b']]);
  });

  it('a later turn starts a new batch', async () => {
    const t = table({ a: 1, b: 2 });
    const load = batchLoader(t.loadMany);
    const first = load('a');
    await turn();
    const second = load('b');
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(t.calls).toEqual([['a'], ['b']]);
    expect(await load('a')).toBe(1);
    expect(t.calls).toEqual([['a'], ['b'], ['a']]);
  });

  it('duplicates in a turn share one key, and every caller gets the answer', async () => {
    const t = table({ a: 1 });
    const load = batchLoader(t.loadMany);
    expect(await Promise.all([load('a'), load('x'), load('a'), load('a'), load('x')])).toEqual([1, null, 1, 1, null]);
    expect(t.calls).toEqual([['a', 'x']]);
  });

  it('a failing loadMany rejects every waiter of its batch with its error', async () => {
    const err = new Error('connection refused');
    let n = 0;
    const load = batchLoader(async () => {
      n++;
      throw err;
    });
    const results = await Promise.allSettled([load('a'), load('b'), load('a')]);
    expect(results).toEqual([
      { status: 'rejected', reason: err },
      { status: 'rejected', reason: err },
      { status: 'rejected', reason: err },
    ]);
    expect(n).toBe(1);
  });

  it('splits a turn at maxBatch: each slice is one call, and one failing slice fails only its own keys', async () => {
    const calls: string[][] = [];
    const load = batchLoader(async (keys) => {
      calls.push(keys);
      if (keys.includes('k3')) throw new Error('slice failed');
      return new Map(keys.map((k) => [k, k.toUpperCase()]));
    }, 2);
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k1'];
    const results = await Promise.allSettled(keys.map((k) => load(k)));
    expect(calls).toEqual([['k0', 'k1'], ['k2', 'k3'], ['k4']]);
    expect(
      results.map((r) => (r.status === 'fulfilled' ? r.value : `rejected: ${(r.reason as Error).message}`)),
    ).toEqual(['K0', 'K1', 'rejected: slice failed', 'rejected: slice failed', 'K4', 'K1']);
  });

  it('uses batches of 500 by default', async () => {
    const t = table({});
    const load = batchLoader(t.loadMany);
    await Promise.all(Array.from({ length: 1001 }, (_, i) => load(`k${i}`)));
    expect(t.calls.map((c) => c.length)).toEqual([500, 500, 1]);
  });
});
