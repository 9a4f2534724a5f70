import { describe, expect, it } from 'vitest';
import { AuthFailures } from '../../../src/limits/auth-failures.js';
import { TokenBuckets } from '../../../src/limits/token-bucket.js';

function clock() {
  let t = 100;
  return {
    now: () => t,
    advance: (s: number) => {
      t += s;
    },
  };
}

describe('TokenBuckets.peek', () => {
  it('answers what take() would, without taking anything', () => {
    const c = clock();
    const b = new TokenBuckets({ burst: 2, perMin: 60, now: c.now });
    expect(b.peek('k')).toEqual({ ok: true, limit: 2, remaining: 2, retryAfterS: 0, resetS: 0 });
    for (let i = 0; i < 10; i++) b.peek('k');
    expect(b.size).toBe(0); // a key never charged leaves no state
    expect(b.take('k')).toMatchObject({ ok: true, remaining: 1 });
    expect(b.peek('k')).toMatchObject({ ok: true, remaining: 1 });
    expect(b.peek('k')).toMatchObject({ ok: true, remaining: 1 });
    expect(b.take('k')).toMatchObject({ ok: true, remaining: 0 });
    expect(b.peek('k')).toEqual({ ok: false, limit: 2, remaining: 0, retryAfterS: 1, resetS: 2 });
    expect(b.take('k').ok).toBe(false);
    c.advance(1);
    expect(b.peek('k')).toMatchObject({ ok: true, remaining: 1 });
    expect(b.peek('k')).toMatchObject({ ok: true, remaining: 1 });
    expect(b.take('k')).toMatchObject({ ok: true, remaining: 0 });
  });
});

describe('AuthFailures', () => {
  const make = (c = clock()) => ({
    c,
    f: new AuthFailures({
      perAddress: { burst: 3, perMin: 60, now: c.now },
      perBot: { burst: 5, perMin: 6, now: c.now },
    }),
  });

  it('charges only failures: checking never spends the budget', () => {
    const { f } = make();
    for (let i = 0; i < 100; i++) expect(f.retryAfterS('10.0.0.1', 'bot-1')).toBe(0);
    f.failed('10.0.0.1');
    f.failed('10.0.0.1');
    expect(f.retryAfterS('10.0.0.1')).toBe(0);
    f.failed('10.0.0.1');
    expect(f.retryAfterS('10.0.0.1')).toBe(1);
  });

  it('limits per address: one address out of budget leaves the others alone, and it refills', () => {
    const { c, f } = make();
    for (let i = 0; i < 3; i++) f.failed('10.0.0.1');
    expect(f.retryAfterS('10.0.0.1')).toBe(1);
    expect(f.retryAfterS('10.0.0.1', 'bot-1')).toBe(1);
    expect(f.retryAfterS('10.0.0.2')).toBe(0);
    c.advance(0.5);
    expect(f.retryAfterS('10.0.0.1')).toBe(1); // half a token: still waiting, at least a second
    c.advance(0.5);
    expect(f.retryAfterS('10.0.0.1')).toBe(0);
  });

  it('limits per bot across addresses, with its own refill', () => {
    const { c, f } = make();
    // Five addresses fail once each against one bot: no address is out of budget, the bot is.
    for (let i = 0; i < 5; i++) f.failed(`10.0.1.${i}`, 'bot-1');
    expect(f.retryAfterS('10.0.9.9', 'bot-1')).toBe(10); // one token at 6 per minute
    expect(f.retryAfterS('10.0.9.9', 'bot-2')).toBe(0);
    expect(f.retryAfterS('10.0.9.9')).toBe(0);
    c.advance(4);
    expect(f.retryAfterS('10.0.9.9', 'bot-1')).toBe(6);
    c.advance(6);
    expect(f.retryAfterS('10.0.9.9', 'bot-1')).toBe(0);
  });

  it('charges a costly check up front, so checks started together share the budget, and refunds one that passed', () => {
    const { f } = make();
    // Three checks start before any has an answer: each takes a token; a fourth must wait.
    for (let i = 0; i < 3; i++) expect(f.charge('10.0.0.1', 'bot-1')).toBe(0);
    expect(f.charge('10.0.0.1', 'bot-1')).toBe(1);
    // Two of them passed: only the one that failed stays charged, to the address and the bot.
    f.refund('10.0.0.1', 'bot-1');
    f.refund('10.0.0.1', 'bot-1');
    expect(f.charge('10.0.0.1')).toBe(0);
    expect(f.charge('10.0.0.1')).toBe(0);
    expect(f.charge('10.0.0.1')).toBe(1);
    for (let i = 0; i < 4; i++) f.failed(`10.0.4.${i}`, 'bot-1');
    expect(f.retryAfterS('10.0.9.9', 'bot-1')).toBe(10); // 1 + 4 failures spent the bot's 5
  });

  it('a refund never raises a budget past its burst', () => {
    const { f } = make();
    f.refund('10.0.0.1', 'bot-1');
    f.failed('10.0.0.1');
    f.refund('10.0.0.1');
    f.refund('10.0.0.1');
    for (let i = 0; i < 3; i++) f.failed('10.0.0.1');
    expect(f.retryAfterS('10.0.0.1')).toBe(1);
  });

  it('a failure without a bot charges only the address', () => {
    const { f } = make();
    for (let i = 0; i < 10; i++) f.failed(`10.0.2.${i}`);
    expect(f.retryAfterS('10.0.3.1', 'bot-1')).toBe(0);
  });

  it('answers the longer wait when both the address and the bot are out of budget', () => {
    const { c, f } = make();
    for (let i = 0; i < 5; i++) f.failed('10.0.0.1', 'bot-1');
    expect(f.retryAfterS('10.0.0.1', 'bot-1')).toBe(10);
    expect(f.retryAfterS('10.0.0.1')).toBe(1);
    c.advance(3);
    // The address has refilled; the bot has not.
    expect(f.retryAfterS('10.0.0.1')).toBe(0);
    expect(f.retryAfterS('10.0.0.1', 'bot-1')).toBe(7);
  });
});
