// Which tracking plan is in force for a project, as the ingestion path asks for it on every request:
// cached like credentials, so a changed plan is in force on every instance within
// 2 × AUTH_CACHE_TTL_MS, and projects without a plan cost no query after the first.
import { batchLoader } from '../cache/batch-loader.js';
import { RefreshingCache } from '../cache/refreshing-cache.js';
import type { Sql } from '../db/connect.js';
import type { PlanRef } from '../pipeline/plans.js';

export class PlanCache {
  private readonly cache: RefreshingCache<PlanRef>;

  constructor(
    private readonly sql: Sql,
    ttlMs: number,
  ) {
    this.cache = new RefreshingCache(
      batchLoader((ids) => this.load(ids)),
      { what: 'tracking plan', ttlMs, maxStaleMs: ttlMs * 2, max: 10_000, negativeMax: 10_000 },
    );
  }

  get stats() {
    return this.cache.stats;
  }

  /** The plan in force, or null when the project has none. */
  get(projectId: string): Promise<PlanRef | null> {
    return this.cache.get(projectId);
  }

  /** A change made through this instance applies here at once. */
  forget(projectId: string): void {
    this.cache.delete(projectId);
  }

  private async load(projectIds: string[]): Promise<Map<string, PlanRef>> {
    const rows = await this.sql<{ project_id: string; version: number; plan: string }[]>`
      SELECT project_id, version, plan::text AS plan FROM tracking_plans WHERE project_id = ANY(${projectIds}::uuid[]) AND plan IS NOT NULL`;
    return new Map(rows.map((r) => [r.project_id, { key: `${r.project_id}:${r.version}`, source: r.plan }]));
  }
}
