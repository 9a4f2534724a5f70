// The suppressed users of each project, in memory on every instance: the ingestion path asks on every request, and
// never waits on the database for it. A project's list is re-read only when its version moved (one small query per
// project and AUTH_CACHE_TTL_MS), so a new suppression is in force everywhere within 2 × AUTH_CACHE_TTL_MS.
import { batchLoader } from '../cache/batch-loader.js';
import { RefreshingCache } from '../cache/refreshing-cache.js';
import type { Sql } from '../db/connect.js';
import { sharedIds } from '../pipeline/suppressed.js';

interface Entry {
  version: number;
  ids: BigInt64Array | null;
}

export class SuppressionCache {
  private readonly cache: RefreshingCache<Entry>;
  /** The last list read per project, reused while its version stands. */
  private readonly known = new Map<string, Entry>();

  constructor(
    private readonly sql: Sql,
    ttlMs: number,
  ) {
    this.cache = new RefreshingCache(
      batchLoader((ids) => this.load(ids)),
      { what: 'suppression list', ttlMs, maxStaleMs: ttlMs * 2, max: 10_000, negativeMax: 10_000 },
    );
  }

  get stats() {
    return this.cache.stats;
  }

  /** The project's suppressed users, sorted; null when it has none. */
  async get(projectId: string): Promise<BigInt64Array | null> {
    return (await this.cache.get(projectId))?.ids ?? null;
  }

  /** get() from memory, without a promise; undefined when it must ask the database (then use get()). */
  getCached(projectId: string): BigInt64Array | null | undefined {
    const e = this.cache.getCached(projectId);
    return e === undefined ? undefined : (e?.ids ?? null);
  }

  /** A change made through this instance applies here at once. */
  forget(projectId: string): void {
    this.cache.delete(projectId);
  }

  private async load(projectIds: string[]): Promise<Map<string, Entry>> {
    const versions = await this.sql<{ project_id: string; version: string }[]>`
      SELECT project_id, version::text FROM suppression_versions WHERE project_id = ANY(${projectIds}::uuid[])`;
    const out = new Map<string, Entry>();
    const stale: string[] = [];
    for (const v of versions) {
      const known = this.known.get(v.project_id);
      if (known !== undefined && known.version === Number(v.version)) out.set(v.project_id, known);
      else stale.push(v.project_id);
    }
    if (stale.length > 0) {
      const lists = await this.sql<{ project_id: string; version: string; ids: string[] | null }[]>`
        SELECT v.project_id, v.version::text, (SELECT array_agg(s.user_id)::text[] FROM suppressions s WHERE s.project_id = v.project_id) AS ids
        FROM suppression_versions v WHERE v.project_id = ANY(${stale}::uuid[])`;
      for (const l of lists) {
        const entry = { version: Number(l.version), ids: l.ids === null ? null : sharedIds(l.ids) };
        this.known.set(l.project_id, entry);
        out.set(l.project_id, entry);
      }
    }
    // A project with no version row has never had a suppression: cached as unknown (no list).
    return out;
  }
}
