// QUARANTINE_MAX_BYTES: what a project may hold in quarantine. The usage comes from the database
// (kept exact by triggers, read like a credential, at most once per AUTH_CACHE_TTL_MS per project
// and only for projects that quarantine), plus what this instance admitted since; past the budget
// a batch's rejected events are answered as usual but not kept, and counted. The counts reach the
// database (and through it every instance's admin summary) with each quarantine prune.
import { batchLoader } from '../cache/batch-loader.js';
import { RefreshingCache } from '../cache/refreshing-cache.js';
import type { Sql } from '../db/connect.js';

export class QuarantineBudget {
  private readonly usage: RefreshingCache<{ bytes: number }>;
  /** Bytes admitted here since the project's usage was last read. */
  private readonly admitted = new Map<string, number>();
  /** Events dropped here since the last flush(), by project. */
  private dropped = new Map<string, number>();
  /** Events dropped since start, by this instance (a metric). */
  droppedTotal = 0;

  constructor(
    private readonly sql: Sql,
    readonly maxBytes: number,
    ttlMs: number,
  ) {
    this.usage = new RefreshingCache(
      batchLoader((ids) => this.load(ids)),
      { what: 'quarantine usage', ttlMs, maxStaleMs: ttlMs * 2, max: 10_000, negativeMax: 10_000 },
    );
  }

  /** Whether `bytes` more may be quarantined for the project; counted as admitted when so. */
  async admit(projectId: string, bytes: number): Promise<boolean> {
    // A usage that cannot be read does not refuse: the commit that follows meets the same database.
    const stored = await this.usage.get(projectId).then(
      (u) => u?.bytes ?? 0,
      () => 0,
    );
    const admitted = this.admitted.get(projectId) ?? 0;
    if (stored + admitted + bytes > this.maxBytes) return false;
    this.admitted.set(projectId, admitted + bytes);
    return true;
  }

  drop(projectId: string, events: number): void {
    this.dropped.set(projectId, (this.dropped.get(projectId) ?? 0) + events);
    this.droppedTotal += events;
  }

  /** Adds the counts of dropped events to the database; kept for the next flush when that fails. */
  async flush(): Promise<void> {
    if (this.dropped.size === 0) return;
    const batch = this.dropped;
    this.dropped = new Map();
    try {
      await this.sql`
        INSERT INTO quarantine_usage AS u (project_id, shard, dropped, dropped_last_at)
        SELECT p, -1, n, now() FROM unnest(${[...batch.keys()]}::uuid[], ${[...batch.values()]}::bigint[]) AS s(p, n) ORDER BY p
        ON CONFLICT (project_id, shard) DO UPDATE SET dropped = u.dropped + excluded.dropped, dropped_last_at = excluded.dropped_last_at`;
    } catch (err) {
      for (const [p, n] of batch) this.dropped.set(p, (this.dropped.get(p) ?? 0) + n);
      throw err;
    }
  }

  private async load(projectIds: string[]): Promise<Map<string, { bytes: number }>> {
    const rows = await this.sql<{ project_id: string; bytes: string }[]>`
      SELECT project_id, sum(bytes) AS bytes FROM quarantine_usage WHERE project_id = ANY(${projectIds}::uuid[]) GROUP BY project_id`;
    for (const id of projectIds) this.admitted.delete(id);
    return new Map(projectIds.map((id) => [id, { bytes: Number(rows.find((r) => r.project_id === id)?.bytes ?? 0) }]));
  }
}
