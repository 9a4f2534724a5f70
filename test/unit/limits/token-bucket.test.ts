import { describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../../src/limits/token-bucket.js';

function clock() {
  let t = 0;
  return {
    now: () => t,
    advance: (s: number) => {
      t += s;
    },
  };
}

describe('TokenBuckets', () => {
  it('allows the burst, then refills at the rate', () => {
    const c = clock();
    const b = new TokenBuckets({ burst: 300, perMin: 120, now: c.now });
    for (let i = 0; i < 300; i++) expect(b.take('k').ok).toBe(true);
    const refused = b.take('k');
    expect(refused).toMatchObject({ ok: false, remaining: 0, retryAfterS: 1, limit: 300 });
    c.advance(0.5);
    expect(b.take('k').ok).toBe(true);
    expect(b.take('k').ok).toBe(false);
    c.advance(60);
    let n = 0;
    while (b.take('k').ok) n++;
    expect(n).toBe(120);
  });

  it('keeps keys apart and reports when the bucket is full again', () => {
    const c = clock();
    const b = new TokenBuckets({ burst: 2, perMin: 60, now: c.now });
    expect(b.take('a').remaining).toBe(1);
    expect(b.take('a').resetS).toBe(2);
    expect(b.take('a').ok).toBe(false);
    expect(b.take('b').ok).toBe(true);
  });

  it('gives a key its own limits, and keeps what its bucket holds when they change', () => {
    const c = clock();
    const b = new TokenBuckets({ burst: 2, perMin: 60, now: c.now });
    const own = { burst: 5, perMin: 600 };
    for (let i = 0; i < 5; i++) expect(b.take('t', own)).toMatchObject({ ok: true, limit: 5 });
    expect(b.take('t', own)).toMatchObject({ ok: false, retryAfterS: 1, limit: 5 });
    c.advance(0.1);
    // 600 a minute: one more after a tenth of a second.
    expect(b.take('t', own).ok).toBe(true);
    // Back to the defaults (null): the bucket refills at their rate, within their burst.
    c.advance(10);
    expect(b.take('t', null)).toMatchObject({ ok: true, limit: 2, remaining: 1 });
    expect(b.take('t', null).ok).toBe(true);
    expect(b.take('t', null).ok).toBe(false);
    // Others keep the defaults; a limit left null is the default's.
    expect(b.take('u')).toMatchObject({ ok: true, limit: 2 });
    expect(b.take('v', { burst: 7, perMin: null })).toMatchObject({ ok: true, limit: 7, resetS: 1 });
  });

  it('forgets idle keys so memory stays bounded', () => {
    const c = clock();
    const b = new TokenBuckets({ burst: 5, perMin: 60, now: c.now, maxKeys: 100 });
    for (let i = 0; i < 1000; i++) {
      b.take(`k${i}`);
      c.advance(0.01);
    }
    expect(b.size).toBeLessThanOrEqual(100);
    c.advance(120);
    b.take('fresh');
    expect(b.size).toBe(1);
  });
});
