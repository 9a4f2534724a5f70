// Failed authentications cost the service work (a database lookup for an unknown key or bot, an
// Ed25519 check for forged initData), so they are limited: per client address and, for initData,
// per bot. Only failures are charged; past the budget, attempts that would cost work again are
// answered 429 at once, while anything answerable from memory (a cached credential, a verified
// session) is served as before. Until the budget is spent every answer is exactly what it was.
//
// A check that costs work is charged before it starts and refunded when it passes: charged after
// it failed, every check started while one token was left would pass, and a flood on many
// connections would get several times its budget of Ed25519 checks and lookups.
//
// An IPv6 address is also counted in its /64 (PREFIX_SHARE budgets together): a subscriber holds a /64 at least and
// could otherwise take a fresh budget from each of its addresses, while strangers sharing one (a hosting provider's,
// an office's) each keep a budget of their own until the /64 as a whole has failed that much more.
import { prefix64 } from '../base/client-address.js';
import { type BucketOptions, TokenBuckets } from './token-bucket.js';

/** Budgets of addresses a /64 holds together. */
export const PREFIX_SHARE = 8;

export interface AuthFailureOptions {
  perAddress: BucketOptions;
  perBot: BucketOptions;
}

export class AuthFailures {
  private readonly addresses: TokenBuckets;
  private readonly prefixes: TokenBuckets;
  private readonly bots: TokenBuckets;

  constructor(o: AuthFailureOptions) {
    this.addresses = new TokenBuckets(o.perAddress);
    this.prefixes = new TokenBuckets({
      ...o.perAddress,
      burst: o.perAddress.burst * PREFIX_SHARE,
      perMin: o.perAddress.perMin * PREFIX_SHARE,
    });
    this.bots = new TokenBuckets(o.perBot);
  }

  /** The last address asked about and its /64: a request asks several times (peek, charge, refund). */
  private last: { address: string; prefix: string | null } = { address: '', prefix: null };

  private prefixOf(address: string): string | null {
    if (this.last.address !== address) this.last = { address, prefix: prefix64(address) };
    return this.last.prefix;
  }

  /** Seconds to wait before this address (and bot, when given) may try again; 0 when it may now. */
  retryAfterS(address: string, botId?: string): number {
    const a = this.addresses.peek(address);
    const prefix = this.prefixOf(address);
    const p = prefix === null ? null : this.prefixes.peek(prefix);
    const b = botId === undefined ? null : this.bots.peek(botId);
    return Math.max(
      a.ok ? 0 : a.retryAfterS,
      p === null || p.ok ? 0 : p.retryAfterS,
      b === null || b.ok ? 0 : b.retryAfterS,
    );
  }

  failed(address: string, botId?: string): void {
    this.addresses.take(address);
    const prefix = this.prefixOf(address);
    if (prefix !== null) this.prefixes.take(prefix);
    if (botId !== undefined) this.bots.take(botId);
  }

  /** Charges a costly check up front: 0 when charged (refund() if it passes), else the seconds to wait. */
  charge(address: string, botId?: string): number {
    const wait = this.retryAfterS(address, botId);
    if (wait === 0) this.failed(address, botId);
    return wait;
  }

  /** The check charged by charge() passed, or never got an answer: it was no failure. */
  refund(address: string, botId?: string): void {
    this.addresses.refund(address);
    const prefix = this.prefixOf(address);
    if (prefix !== null) this.prefixes.refund(prefix);
    if (botId !== undefined) this.bots.refund(botId);
  }

  /** Charges the bot's budget alone, when a signature check starts running: true when charged. */
  chargeBot(botId: string): boolean {
    return this.bots.take(botId).ok;
  }

  refundBot(botId: string): void {
    this.bots.refund(botId);
  }
}
