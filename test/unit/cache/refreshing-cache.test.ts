import { describe, expect, it } from 'vitest';
import { LookupFailed, RefreshingCache, type RefreshingCacheOptions } from '../../../src/cache/refreshing-cache.js';

interface Token {
  id: string;
  botId: string;
  v: number;
}

const TTL = 1000;
const MAX_STALE = 2000;

/**
 * A load whose answers come from `db` (a missing key: null) as it was when asked, each call recorded;
 * after `hold()`, answers wait until `releaseAll()`, so a test can act while a load is in flight.
 */
function setup(o: Partial<RefreshingCacheOptions> = {}) {
  let t = 0;
  const db = new Map<string, Token>();
  const calls: string[] = [];
  let holding = false;
  let held: (() => void)[] = [];
  let fail: unknown = null;
  const load = async (key: string): Promise<Token | null> => {
    calls.push(key);
    // The database answers as of the moment it was asked; the answer may arrive later.
    const v = db.get(key);
    const err = fail;
    if (holding) await new Promise<void>((resolve) => held.push(resolve));
    if (err !== null) throw err;
    return v === undefined ? null : { ...v };
  };
  const cache = new RefreshingCache<Token>(load, {
    what: 'API key',
    ttlMs: TTL,
    maxStaleMs: MAX_STALE,
    max: 100,
    negativeMax: 100,
    now: () => t,
    ...o,
  });
  return {
    cache,
    db,
    calls,
    advance: (ms: number) => {
      t += ms;
    },
    put: (id: string, v = 1, botId = 'bot-1') => db.set(id, { id, botId, v }),
    hold: () => {
      holding = true;
    },
    releaseAll: () => {
      holding = false;
      const h = held;
      held = [];
      for (const resolve of h) resolve();
    },
    failWith: (err: unknown) => {
      fail = err;
    },
    get held() {
      return held.length;
    },
  };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

async function state<T>(p: Promise<T>): Promise<'pending' | { value: T } | { error: unknown }> {
  let s: 'pending' | { value: T } | { error: unknown } = 'pending';
  p.then(
    (value) => {
      s = { value };
    },
    (error: unknown) => {
      s = { error };
    },
  );
  await turn();
  return s;
}

describe('RefreshingCache.getCached: get() without a promise when memory answers', () => {
  it('answers fresh and stale entries (refreshing the stale one once), fresh unknowns as null, the rest undefined', async () => {
    const c = setup();
    expect(c.cache.getCached('k')).toBeUndefined();
    c.put('k', 1);
    await c.cache.get('k');
    expect(c.cache.getCached('k')).toMatchObject({ v: 1 });
    c.put('k', 2);
    c.advance(TTL);
    expect(c.cache.getCached('k')).toMatchObject({ v: 1 });
    expect(c.cache.getCached('k')).toMatchObject({ v: 1 });
    await turn();
    expect(c.calls).toEqual(['k', 'k']);
    expect(c.cache.getCached('k')).toMatchObject({ v: 2 });
    c.advance(MAX_STALE);
    expect(c.cache.getCached('k')).toBeUndefined();
    expect(await c.cache.get('none')).toBeNull();
    expect(c.cache.getCached('none')).toBeNull();
    c.advance(TTL);
    expect(c.cache.getCached('none')).toBeUndefined();
  });
});

describe('RefreshingCache: known keys', () => {
  it('answers a fresh entry from memory', async () => {
    const c = setup();
    c.put('k', 1);
    expect(await c.cache.get('k')).toEqual({ id: 'k', botId: 'bot-1', v: 1 });
    c.put('k', 2);
    c.advance(TTL - 1);
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    expect(c.calls).toEqual(['k']);
    expect(c.cache.stats).toEqual({ hits: 1, misses: 1 });
  });

  it('past the TTL answers the stale value at once while one background load refreshes it', async () => {
    const c = setup();
    c.put('k', 1);
    await c.cache.get('k');
    c.put('k', 2);
    c.advance(TTL);
    c.hold();
    // Answered although the refresh has not come back; three stale reads start one refresh.
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    expect(c.calls).toEqual(['k', 'k']);
    c.releaseAll();
    await turn();
    expect(await c.cache.get('k')).toMatchObject({ v: 2 });
    expect(c.calls).toEqual(['k', 'k']);
    expect(c.cache.stats).toEqual({ hits: 4, misses: 1 });
  });

  it('a failed background refresh keeps the stale value until maxStaleMs, then the failure shows', async () => {
    const c = setup();
    c.put('k', 1);
    await c.cache.get('k');
    c.advance(TTL);
    c.failWith(new Error('connection lost'));
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    await turn();
    expect(await c.cache.get('k')).toMatchObject({ v: 1 });
    expect(c.calls).toEqual(['k', 'k', 'k']);
    c.advance(MAX_STALE - TTL);
    await expect(c.cache.get('k')).rejects.toBeInstanceOf(LookupFailed);
  });

  it('past maxStaleMs waits for the load: a revoked credential stops working', async () => {
    const c = setup();
    c.put('k', 1);
    await c.cache.get('k');
    c.db.delete('k');
    c.advance(MAX_STALE);
    c.hold();
    const p = c.cache.get('k');
    expect(await state(p)).toBe('pending');
    c.releaseAll();
    expect(await p).toBeNull();
    expect(c.calls).toEqual(['k', 'k']);
    expect(c.cache.cached('k')).toBe(true);
    expect(await c.cache.get('k')).toBeNull();
    expect(c.calls).toHaveLength(2);
  });

  it("an entry's age counts from when its load started, not from when the answer came", async () => {
    const c = setup();
    c.put('k', 1);
    c.hold();
    const p = c.cache.get('k');
    c.advance(TTL - 1); // a slow query
    c.releaseAll();
    await p;
    c.advance(1);
    c.put('k', 2);
    expect(await c.cache.get('k')).toMatchObject({ v: 1 }); // stale already: a refresh starts
    expect(c.calls).toEqual(['k', 'k']);
    c.advance(MAX_STALE - TTL);
    expect(c.cache.cached('k')).toBe(true); // refreshed meanwhile
    await turn();
    expect(await c.cache.get('k')).toMatchObject({ v: 2 });
  });

  it('concurrent gets of a key share one load', async () => {
    const c = setup();
    c.put('k', 7);
    c.hold();
    const ps = [c.cache.get('k'), c.cache.get('k'), c.cache.get('k')];
    await turn();
    expect(c.held).toBe(1);
    c.releaseAll();
    const values = await Promise.all(ps);
    expect(values.map((v) => v?.v)).toEqual([7, 7, 7]);
    expect(values[1]).toBe(values[0]);
    expect(c.calls).toEqual(['k']);
  });
});

describe('RefreshingCache: unknown keys', () => {
  it('remembers a null answer for the TTL, then asks again', async () => {
    const c = setup();
    expect(await c.cache.get('nope')).toBeNull();
    c.advance(TTL - 1);
    expect(await c.cache.get('nope')).toBeNull();
    expect(c.calls).toEqual(['nope']);
    c.put('nope', 3); // created meanwhile
    c.advance(1);
    expect(await c.cache.get('nope')).toMatchObject({ v: 3 });
    expect(c.calls).toEqual(['nope', 'nope']);
  });

  it('keeps unknown keys apart: a flood of them never evicts a known one', async () => {
    const c = setup({ max: 2, negativeMax: 3 });
    c.put('a');
    c.put('b');
    await c.cache.get('a');
    await c.cache.get('b');
    for (let i = 0; i < 50; i++) expect(await c.cache.get(`random-${i}`)).toBeNull();
    expect(c.calls).toHaveLength(52);
    expect(await c.cache.get('a')).toMatchObject({ id: 'a' });
    expect(await c.cache.get('b')).toMatchObject({ id: 'b' });
    expect(c.cache.cached('a') && c.cache.cached('b')).toBe(true);
    expect(c.calls).toHaveLength(52);
    // The negative side is bounded on its own: the last three are remembered, older ones asked again.
    expect(await c.cache.get('random-49')).toBeNull();
    expect(c.calls).toHaveLength(52);
    expect(c.cache.cached('random-47')).toBe(true);
    expect(c.cache.cached('random-46')).toBe(false);
    expect(await c.cache.get('random-0')).toBeNull();
    expect(c.calls).toHaveLength(53);
    // Known keys past max do evict each other, least recently used first.
    c.put('c');
    await c.cache.get('c');
    expect(c.cache.cached('a')).toBe(false);
    expect(c.cache.cached('b') && c.cache.cached('c')).toBe(true);
  });

  it('a background refresh that finds the key gone answers null from then on, within the stale window', async () => {
    const c = setup();
    c.put('k');
    await c.cache.get('k');
    c.db.delete('k'); // revoked
    c.advance(TTL);
    expect(await c.cache.get('k')).toMatchObject({ id: 'k' }); // stale answer; the refresh finds nothing
    await turn();
    expect(await c.cache.get('k')).toBeNull();
    expect(c.calls).toEqual(['k', 'k']);
  });

  it('a key that turns unknown answers null, and known again once the null answer has expired', async () => {
    const c = setup();
    c.put('k');
    await c.cache.get('k');
    c.db.delete('k');
    c.advance(MAX_STALE);
    expect(await c.cache.get('k')).toBeNull();
    c.put('k', 2); // created again
    c.advance(TTL - 1);
    expect(await c.cache.get('k')).toBeNull(); // the null answer holds for the TTL
    c.advance(1);
    expect(await c.cache.get('k')).toMatchObject({ v: 2 });
    c.advance(TTL - 1);
    expect(await c.cache.get('k')).toMatchObject({ v: 2 });
    expect(c.calls).toHaveLength(3);
  });
});

describe('RefreshingCache.cached', () => {
  it('is true only while answering costs no query: known until maxStaleMs, unknown until the TTL', async () => {
    const c = setup();
    c.put('k');
    expect(c.cache.cached('k')).toBe(false);
    expect(c.cache.cached('u')).toBe(false);
    await c.cache.get('k');
    await c.cache.get('u');
    expect(c.cache.cached('k')).toBe(true);
    expect(c.cache.cached('u')).toBe(true);
    c.advance(TTL);
    expect(c.cache.cached('k')).toBe(true);
    expect(c.cache.cached('u')).toBe(false);
    c.advance(MAX_STALE - TTL);
    expect(c.cache.cached('k')).toBe(false);
    expect(c.calls).toEqual(['k', 'u']);
  });
});

describe('RefreshingCache: invalidation', () => {
  it('delete() drops a known or an unknown entry', async () => {
    const c = setup();
    c.put('k');
    await c.cache.get('k');
    await c.cache.get('u');
    c.cache.delete('k');
    c.cache.delete('u');
    expect(c.cache.cached('k')).toBe(false);
    expect(c.cache.cached('u')).toBe(false);
    await c.cache.get('k');
    await c.cache.get('u');
    expect(c.calls).toEqual(['k', 'u', 'k', 'u']);
  });

  it('deleteWhere() drops the entries that match', async () => {
    const c = setup();
    c.put('t1', 1, 'bot-1');
    c.put('t2', 1, 'bot-2');
    c.put('t3', 1, 'bot-1');
    for (const k of ['t1', 't2', 't3']) await c.cache.get(k);
    c.cache.deleteWhere((v) => v.botId === 'bot-1');
    expect(['t1', 't2', 't3'].map((k) => c.cache.cached(k))).toEqual([false, true, false]);
  });

  it('delete() wins over a load that started before it: its stale answer is not stored', async () => {
    const c = setup();
    c.put('k', 1);
    c.hold();
    const p = c.cache.get('k');
    await turn();
    // The token is revoked while the load that read it is in flight.
    c.db.delete('k');
    c.cache.delete('k');
    c.releaseAll();
    expect(await p).toMatchObject({ v: 1 });
    expect(c.cache.cached('k')).toBe(false);
    expect(await c.cache.get('k')).toBeNull();
    expect(c.calls).toEqual(['k', 'k']);
  });

  it('deleteWhere() wins over a background refresh that started before it', async () => {
    const c = setup();
    c.put('k', 1);
    await c.cache.get('k');
    c.advance(TTL);
    c.hold();
    expect(await c.cache.get('k')).toMatchObject({ v: 1 }); // stale answer, refresh in flight
    c.cache.deleteWhere((v) => v.id === 'k');
    c.put('k', 1, 'bot-9');
    c.releaseAll();
    await turn();
    expect(c.cache.cached('k')).toBe(false);
    c.put('k', 2);
    expect(await c.cache.get('k')).toMatchObject({ v: 2 });
    expect(c.calls).toEqual(['k', 'k', 'k']);
  });

  it('a null load that started before delete() is not remembered either', async () => {
    const c = setup();
    c.hold();
    const p = c.cache.get('k');
    await turn();
    c.cache.delete('k');
    c.releaseAll();
    expect(await p).toBeNull();
    expect(c.cache.cached('k')).toBe(false);
  });
});

describe('RefreshingCache: failures', () => {
  it('a failing load throws LookupFailed naming what was looked up, and is not cached', async () => {
    const c = setup({ what: 'bot' });
    const cause = new Error('connect ECONNREFUSED');
    c.failWith(cause);
    const ps = [c.cache.get('k'), c.cache.get('k')];
    const errs = await Promise.all(
      ps.map((p) =>
        p.then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    for (const err of errs) {
      expect(err).toBeInstanceOf(LookupFailed);
      expect(err).toMatchObject({
        name: 'LookupFailed',
        what: 'bot',
        cause,
        message: 'the bot could not be looked up: connect ECONNREFUSED',
      });
    }
    expect(c.calls).toEqual(['k']);
    c.failWith(null);
    c.put('k');
    expect(await c.cache.get('k')).toMatchObject({ id: 'k' });
    expect(c.calls).toEqual(['k', 'k']);
  });

  it('names a thrown non-Error too', async () => {
    const c = setup();
    c.failWith('timeout');
    await expect(c.cache.get('k')).rejects.toMatchObject({
      what: 'API key',
      message: 'the API key could not be looked up: timeout',
    });
  });
});
