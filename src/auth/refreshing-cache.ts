// A bounded cache for what the database says about credentials (tokens, bots, plans).
// Fresh for `ttlMs`; for a while after that it still answers while one refresh runs in the
// background, so a hot key never waits on the database; past `maxStaleMs` it must be re-read,
// which is what bounds how long a revoked token or a switched-off bot keeps working.
import { LRUCache } from 'lru-cache';

interface Entry<V> {
  value: V;
  at: number;
}

export interface CacheStats {
  hits: number;
  misses: number;
}

export class RefreshingCache<V extends object> {
  private readonly lru: LRUCache<string, Entry<V>>;
  private readonly inflight = new Map<string, Promise<V>>();
  /** Bumped by every invalidation, so a read that started before it cannot store its stale answer. */
  private generation = 0;
  readonly stats: CacheStats = { hits: 0, misses: 0 };

  constructor(
    private readonly load: (key: string) => Promise<V>,
    private readonly ttlMs: number,
    private readonly maxStaleMs: number,
    max: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lru = new LRUCache({ max });
  }

  async get(key: string): Promise<V> {
    const e = this.lru.get(key);
    if (e !== undefined) {
      const age = this.now() - e.at;
      if (age < this.ttlMs) {
        this.stats.hits++;
        return e.value;
      }
      if (age < this.maxStaleMs) {
        this.stats.hits++;
        this.fetch(key).catch(() => undefined);
        return e.value;
      }
    }
    this.stats.misses++;
    return this.fetch(key);
  }

  /** The cached value if it is fresh; for callers that must not wait. */
  peek(key: string): V | undefined {
    const e = this.lru.get(key);
    return e !== undefined && this.now() - e.at < this.ttlMs ? e.value : undefined;
  }

  delete(key: string): void {
    this.generation++;
    this.lru.delete(key);
  }

  deleteWhere(pred: (value: V) => boolean): void {
    this.generation++;
    for (const [key, e] of this.lru.entries()) if (pred(e.value)) this.lru.delete(key);
  }

  private fetch(key: string): Promise<V> {
    let p = this.inflight.get(key);
    if (p === undefined) {
      const started = this.now();
      const generation = this.generation;
      p = this.load(key).then(
        (value) => {
          this.inflight.delete(key);
          if (generation === this.generation) this.lru.set(key, { value, at: started });
          return value;
        },
        (err: unknown) => {
          this.inflight.delete(key);
          throw err;
        },
      );
      this.inflight.set(key, p);
    }
    return p;
  }
}
