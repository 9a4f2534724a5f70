// A bounded cache for what the database says about a key (tokens, bots, plans, allowances, usage).
// Fresh for `ttlMs`; for a while after that it still answers while one refresh runs in the
// background, so a hot key never waits on the database; past `maxStaleMs` it must be re-read,
// which is what bounds how long a revoked token or a switched-off bot keeps working.
// Unknown keys ("no such token") live in a small LRU of their own: a flood of random keys can
// neither evict the entries real clients use nor cost more than one query per key and TTL.
import { LRUCache } from 'lru-cache';

interface Entry<V> {
  value: V;
  at: number;
}

export interface CacheStats {
  hits: number;
  misses: number;
}

/** The database could not be asked; `what` names the credential for the client's message. */
export class LookupFailed extends Error {
  constructor(
    readonly what: string,
    override readonly cause: unknown,
  ) {
    super(`the ${what} could not be looked up: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'LookupFailed';
  }
}

export interface RefreshingCacheOptions {
  /** Named in LookupFailed ("API key", "bot"). */
  what: string;
  ttlMs: number;
  maxStaleMs: number;
  max: number;
  /** Bound on remembered unknown keys. */
  negativeMax: number;
  now?: () => number;
}

export class RefreshingCache<V extends object> {
  private readonly lru: LRUCache<string, Entry<V>>;
  private readonly unknown: LRUCache<string, number>;
  private readonly inflight = new Map<string, Promise<V | null>>();
  /** Bumped by every invalidation, so a read that started before it cannot store its stale answer. */
  private generation = 0;
  private readonly now: () => number;
  readonly stats: CacheStats = { hits: 0, misses: 0 };

  constructor(
    private readonly load: (key: string) => Promise<V | null>,
    private readonly o: RefreshingCacheOptions,
  ) {
    this.lru = new LRUCache({ max: o.max });
    this.unknown = new LRUCache({ max: o.negativeMax });
    this.now = o.now ?? (() => performance.now());
  }

  /** null: the database knows no such key. Throws LookupFailed when it cannot be asked and nothing usable is cached. */
  async get(key: string): Promise<V | null> {
    const cached = this.getCached(key);
    if (cached !== undefined) return cached;
    this.stats.misses++;
    return this.fetch(key);
  }

  /** True while `key` is being read: another get() of it waits for that read and costs no query of its own. */
  loading(key: string): boolean {
    return this.inflight.has(key);
  }

  /** True when `key` is cached as known or unknown, fresh: answering it costs no query. */
  cached(key: string): boolean {
    const e = this.lru.get(key);
    if (e !== undefined && this.now() - e.at < this.o.maxStaleMs) return true;
    const missAt = this.unknown.get(key);
    return missAt !== undefined && this.now() - missAt < this.o.ttlMs;
  }

  /**
   * get() without a promise when the answer is in memory (as get() would give it, refreshing a stale entry in the
   * background); undefined when it must be read. For the hot path, where most keys are answered from memory.
   */
  getCached(key: string): V | null | undefined {
    const e = this.lru.get(key);
    if (e !== undefined) {
      const age = this.now() - e.at;
      if (age < this.o.ttlMs) {
        this.stats.hits++;
        return e.value;
      }
      if (age < this.o.maxStaleMs) {
        this.stats.hits++;
        this.fetch(key).catch(() => undefined);
        return e.value;
      }
    }
    const missAt = this.unknown.get(key);
    if (missAt !== undefined && this.now() - missAt < this.o.ttlMs) {
      this.stats.hits++;
      return null;
    }
    return undefined;
  }

  /** The cached value, fresh or not, without counting or refreshing (for a loader that merges). */
  peek(key: string): V | undefined {
    return this.lru.peek(key)?.value;
  }

  delete(key: string): void {
    this.generation++;
    this.lru.delete(key);
    this.unknown.delete(key);
  }

  deleteWhere(pred: (value: V) => boolean): void {
    this.generation++;
    for (const [key, e] of this.lru.entries()) if (pred(e.value)) this.lru.delete(key);
  }

  private fetch(key: string): Promise<V | null> {
    let p = this.inflight.get(key);
    if (p === undefined) {
      const started = this.now();
      const generation = this.generation;
      p = this.load(key).then(
        (value) => {
          this.inflight.delete(key);
          if (generation === this.generation) {
            if (value === null) {
              this.lru.delete(key);
              this.unknown.set(key, started);
            } else {
              this.unknown.delete(key);
              this.lru.set(key, { value, at: started });
            }
          }
          return value;
        },
        (err: unknown) => {
          this.inflight.delete(key);
          throw new LookupFailed(this.o.what, err);
        },
      );
      this.inflight.set(key, p);
    }
    return p;
  }
}
