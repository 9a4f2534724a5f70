// Token buckets keyed by credential: capacity `burst`, refilled continuously at `perMin` per minute.
// The clock is injected so tests never sleep; buckets that have refilled completely carry no state
// and are swept, so memory stays bounded by the keys active within one refill period.

/** The largest bucket a token may be given (PATCH /admin/tokens/:tokenId; the migration's CHECK says the same). */
export const TOKEN_LIMIT_MAX = { maxPerMin: 60_000_000, maxBurst: 10_000_000 } as const;

/** A key's own bucket (a token's limits); null where the options' hold. */
export interface BucketLimits {
  burst: number | null;
  perMin: number | null;
}

export interface BucketOptions {
  burst: number;
  perMin: number;
  /** Seconds, monotonic. */
  now?: () => number;
  /** Hard bound on tracked keys; past it, full buckets are swept at once, then the oldest. */
  maxKeys?: number;
}

export interface TakeResult {
  ok: boolean;
  limit: number;
  remaining: number;
  /** Seconds until one request is allowed again (0 when ok). */
  retryAfterS: number;
  /** Seconds until the bucket is full again. */
  resetS: number;
}

interface Bucket {
  tokens: number;
  at: number;
  /** Its own limits, when not the options'. */
  own: BucketLimits | null;
}

const monotonicSeconds = () => performance.now() / 1000;

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly ratePerS: number;
  private readonly now: () => number;
  private readonly maxKeys: number;
  private lastSweep: number;

  constructor(private readonly opts: BucketOptions) {
    this.ratePerS = opts.perMin / 60;
    this.now = opts.now ?? monotonicSeconds;
    this.maxKeys = opts.maxKeys ?? 1_000_000;
    this.lastSweep = this.now();
  }

  get size(): number {
    return this.buckets.size;
  }

  /** What a credential that was never charged would see: a full bucket. */
  fresh(): TakeResult {
    return { ok: true, limit: this.opts.burst, remaining: this.opts.burst, retryAfterS: 0, resetS: 0 };
  }

  /**
   * Takes one token if there is one. `own`: the key's own limits (null: the options'); when they change, the bucket
   * keeps what it holds, within the new burst.
   */
  take(key: string, own: BucketLimits | null = null): TakeResult {
    return this.visit(key, true, own);
  }

  /** What take() would answer, without taking anything (a key never charged has a full bucket). */
  peek(key: string): TakeResult {
    if (!this.buckets.has(key)) return this.fresh();
    return this.visit(key, false, this.buckets.get(key)!.own);
  }

  /** Gives back one token that take() took (never past the burst; a swept bucket is full already). */
  refund(key: string): void {
    const b = this.buckets.get(key);
    if (b !== undefined) b.tokens = Math.min(this.burstOf(b.own), b.tokens + 1);
  }

  private visit(key: string, taking: boolean, own: BucketLimits | null): TakeResult {
    const t = this.now();
    if (t - this.lastSweep > 60 || this.buckets.size >= this.maxKeys) this.sweep(t);
    const burst = this.burstOf(own);
    const ratePerS = this.rateOf(own);
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: burst, at: t, own };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(burst, b.tokens + (t - b.at) * ratePerS);
      b.at = t;
      b.own = own;
    }
    const ok = b.tokens >= 1;
    if (ok && taking) b.tokens -= 1;
    return {
      ok,
      limit: burst,
      remaining: Math.floor(b.tokens),
      retryAfterS: ok ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / ratePerS)),
      resetS: Math.ceil((burst - b.tokens) / ratePerS),
    };
  }

  private burstOf(own: BucketLimits | null): number {
    return own?.burst ?? this.opts.burst;
  }

  /** Per second. */
  private rateOf(own: BucketLimits | null): number {
    return own?.perMin == null ? this.ratePerS : own.perMin / 60;
  }

  private sweep(t: number): void {
    this.lastSweep = t;
    for (const [key, b] of this.buckets) {
      if (b.tokens + (t - b.at) * this.rateOf(b.own) >= this.burstOf(b.own)) this.buckets.delete(key);
    }
    // Still over the bound with every key active: drop the oldest down to 90%, so sweeps stay rare.
    if (this.buckets.size >= this.maxKeys) {
      let excess = this.buckets.size - Math.floor(this.maxKeys * 0.9);
      for (const key of this.buckets.keys()) {
        if (excess-- <= 0) break;
        this.buckets.delete(key);
      }
    }
  }
}
