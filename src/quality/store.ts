// Tracking plans and the quarantine in PostgreSQL: what the admin API reads and writes.
import type { Sql } from '../db/connect.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../pipeline/decode.js';
import { deeperThan } from '../pipeline/json.js';
import type { Diagnostic } from '../pipeline/diagnostics.js';
import type { TrackingPlan } from '../pipeline/plans.js';

export interface StoredPlan extends TrackingPlan {
  version: number;
  updatedAt: string;
}

export interface QuarantineItem {
  id: number;
  eventId: string | null;
  receivedAt: string;
  channel: string;
  botId: string;
  /** The verified initData user, for events of the webapp endpoint. */
  userId: string | null;
  diagnostics: Diagnostic[];
  /** The event as sent; a string of its first 64 KiB when it was longer (then `truncated`). */
  event: unknown;
  truncated: boolean;
}

/** What a replay needs of a quarantined event. */
export interface QuarantineRow {
  id: number;
  botId: string;
  channel: 'bot_api' | 'webapp';
  connectionId: string;
  userId: string | null;
  event: string;
  truncated: boolean;
}

interface ItemRow {
  id: string;
  event_id: string | null;
  received_at: Date;
  channel: string;
  bot_id: string;
  user_id: string | null;
  diagnostics: Diagnostic[];
  event: string;
  truncated: boolean;
}

export interface SummaryEntry {
  code: string;
  count: number;
  /** Only on quarantine_full. */
  warning?: string;
}

export interface QuarantineFilter {
  code?: string | undefined;
  ids?: number[] | undefined;
}

/**
 * What one page of the quarantine list, and one replay, read at most (the events' JSON as kept; at least one event).
 */
export const LIST_MAX_BYTES = 8 * 1024 * 1024;
export const REPLAY_MAX_BYTES = 64 * 1024 * 1024;

export class QualityStore {
  /** `maxDepth`: events kept before MAX_JSON_DEPTH bounded bodies may nest deeper; those are listed as text. */
  constructor(
    private readonly sql: Sql,
    private readonly maxDepth = DEFAULT_MAX_JSON_DEPTH,
  ) {}

  async putPlan(projectId: string, plan: TrackingPlan): Promise<StoredPlan> {
    const [r] = await this.sql<{ version: number; updated_at: Date }[]>`
      INSERT INTO tracking_plans AS t (project_id, version, plan) VALUES (${projectId}, 1, ${this.sql.json(plan as never)})
      ON CONFLICT (project_id) DO UPDATE SET version = t.version + 1, plan = excluded.plan, updated_at = now()
      RETURNING version, updated_at`;
    return { ...plan, version: r!.version, updatedAt: r!.updated_at.toISOString() };
  }

  async getPlan(projectId: string): Promise<StoredPlan | null> {
    const [r] = await this.sql<{ version: number; plan: TrackingPlan | null; updated_at: Date }[]>`
      SELECT version, plan, updated_at FROM tracking_plans WHERE project_id = ${projectId}`;
    if (r === undefined || r.plan === null) return null;
    return {
      mode: r.plan.mode,
      unplannedEvents: r.plan.unplannedEvents,
      events: r.plan.events,
      version: r.version,
      updatedAt: r.updated_at.toISOString(),
    };
  }

  /** The version number stays, so that the next plan gets a new one. */
  async deletePlan(projectId: string): Promise<void> {
    await this.sql`UPDATE tracking_plans SET plan = NULL, updated_at = now() WHERE project_id = ${projectId}`;
  }

  /** Newest first; `before` is the id to continue below. */
  async listQuarantine(
    projectId: string,
    f: { code?: string | undefined; before?: number | undefined; limit: number },
  ): Promise<{ items: QuarantineItem[]; next: number | null }> {
    // A page ends after LIST_MAX_BYTES of events: a reply of a thousand 64 KiB events would be 64 MiB.
    const page = await this.sql<(ItemRow & { total: string })[]>`
      SELECT * FROM (
        SELECT id, event_id, received_at, channel, bot_id, user_id, diagnostics, event, truncated,
          sum(octet_length(event)) OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) AS total
        FROM quarantine
        WHERE project_id = ${projectId}
          ${f.code === undefined ? this.sql`` : this.sql`AND codes @> ARRAY[${f.code}]::text[]`}
          ${f.before === undefined ? this.sql`` : this.sql`AND id < ${f.before}`}
        ORDER BY id DESC LIMIT ${f.limit + 1}
      ) q ORDER BY id DESC`;
    let kept = 0;
    while (kept < page.length && (kept === 0 || Number(page[kept]!.total) <= LIST_MAX_BYTES)) kept++;
    const limit = Math.min(f.limit, kept);
    const items = page.slice(0, limit).map((r) => ({
      id: Number(r.id),
      eventId: r.event_id,
      receivedAt: r.received_at.toISOString(),
      channel: r.channel,
      botId: r.bot_id,
      userId: r.user_id,
      diagnostics: r.diagnostics,
      event: r.truncated ? r.event : this.shown(r.event),
      truncated: r.truncated,
    }));
    return { items, next: page.length > limit ? items[items.length - 1]!.id : null };
  }

  /** The event as sent, parsed; as its text when it nests deeper than a body may now (kept before the bound). */
  private shown(event: string): unknown {
    const value: unknown = JSON.parse(event);
    return deeperThan(value, this.maxDepth) ? event : value;
  }

  /**
   * Quarantined events per error code; and, when the project's quarantine was full
   * (QUARANTINE_MAX_BYTES), a `quarantine_full` entry: the rejected events not kept since the
   * quarantine was last cleared, with a warning.
   */
  async summary(projectId: string): Promise<SummaryEntry[]> {
    const [rows, [usage]] = await Promise.all([
      this.sql<{ code: string; count: number }[]>`
        SELECT code, count(*)::int AS count FROM quarantine, unnest(codes) AS code
        WHERE project_id = ${projectId} GROUP BY code ORDER BY count DESC, code`,
      this.sql<{ dropped: string; bytes: string; last: Date | null }[]>`
        SELECT sum(dropped) AS dropped, sum(bytes) AS bytes, max(dropped_last_at) AS last FROM quarantine_usage WHERE project_id = ${projectId}`,
    ]);
    const out: SummaryEntry[] = rows.map((r) => ({ code: r.code, count: r.count }));
    const dropped = Number(usage?.dropped ?? 0);
    if (dropped > 0) {
      out.push({
        code: 'quarantine_full',
        count: dropped,
        warning: `The quarantine held its QUARANTINE_MAX_BYTES (it holds ${Number(usage!.bytes)} bytes now): ${dropped} rejected events were not kept, the last at ${usage!.last?.toISOString() ?? 'an unknown time'}. Replay or delete quarantined events to make room.`,
      });
    }
    return out;
  }

  /** The events a replay takes, oldest first, at most `limit`. */
  async quarantined(projectId: string, f: QuarantineFilter, limit: number): Promise<QuarantineRow[]> {
    // At most REPLAY_MAX_BYTES of events (at least one) are held at once; the rest wait for the next replay.
    const rows = await this.sql<
      {
        id: string;
        bot_id: string;
        channel: 'bot_api' | 'webapp';
        connection_id: string;
        user_id: string | null;
        event: string;
        truncated: boolean;
      }[]
    >`
      SELECT id, bot_id, channel, connection_id, user_id, event, truncated FROM (
        SELECT id, bot_id, channel, connection_id, user_id, event, truncated,
          sum(octet_length(event)) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS total,
          row_number() OVER (ORDER BY id) AS n
        FROM quarantine
        WHERE project_id = ${projectId}
          ${f.code === undefined ? this.sql`` : this.sql`AND codes @> ARRAY[${f.code}]::text[]`}
          ${f.ids === undefined ? this.sql`` : this.sql`AND id = ANY(${f.ids}::bigint[])`}
        ORDER BY id LIMIT ${limit}
      ) q WHERE total <= ${REPLAY_MAX_BYTES} OR n = 1 ORDER BY id`;
    return rows.map((r) => ({
      id: Number(r.id),
      botId: r.bot_id,
      channel: r.channel,
      connectionId: r.connection_id,
      userId: r.user_id,
      event: r.event,
      truncated: r.truncated,
    }));
  }

  async release(projectId: string, ids: number[]): Promise<void> {
    if (ids.length > 0)
      await this.sql`DELETE FROM quarantine WHERE project_id = ${projectId} AND id = ANY(${ids}::bigint[])`;
  }

  /** Still rejected after a replay: the new reasons replace the old. */
  async rediagnose(projectId: string, items: { id: number; diagnostics: Diagnostic[] }[]): Promise<void> {
    if (items.length === 0) return;
    await this.sql`
      UPDATE quarantine q SET diagnostics = u.d::jsonb,
        codes = ARRAY(SELECT DISTINCT x->>'code' FROM jsonb_array_elements(u.d::jsonb) x WHERE x->>'severity' = 'error')
      FROM unnest(${items.map((i) => i.id)}::bigint[], ${items.map((i) => JSON.stringify(i.diagnostics))}::text[]) AS u(id, d)
      WHERE q.project_id = ${projectId} AND q.id = u.id`;
  }

  async clear(projectId: string, code: string | undefined): Promise<void> {
    if (code === undefined) {
      await this.sql`DELETE FROM quarantine WHERE project_id = ${projectId}`;
      await this.sql`UPDATE quarantine_usage SET dropped = 0 WHERE project_id = ${projectId} AND dropped <> 0`;
    } else await this.sql`DELETE FROM quarantine WHERE project_id = ${projectId} AND codes @> ARRAY[${code}]::text[]`;
  }

  /**
   * Keeps the quarantine bounded: older than the retention, and past the newest `maxEvents` of a
   * project, events are deleted. One instance at a time does it (an advisory lock); null when
   * another one was at it, and nothing was done. `projects`: the only ones that can have grown past
   * the bound (those that quarantined since the last prune), so that the whole quarantine is not
   * counted every time; null: every project.
   */
  async prune(maxEvents: number, retentionDays: number, projects: readonly string[] | null): Promise<number | null> {
    return this.sql.begin(async (tx) => {
      const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(7240311906) AS ok`;
      if (!lock?.ok) return null;
      const old = await tx`DELETE FROM quarantine WHERE received_at < now() - make_interval(days => ${retentionDays})`;
      if (projects !== null && projects.length === 0) return old.count;
      // Per project, the id of the newest event past the bound (found by walking its index).
      const over =
        projects === null
          ? await tx`
          DELETE FROM quarantine q USING (
            SELECT project_id, (SELECT id FROM quarantine i WHERE i.project_id = c.project_id ORDER BY id DESC OFFSET ${maxEvents} LIMIT 1) AS below
            FROM (SELECT project_id FROM quarantine GROUP BY project_id HAVING count(*) > ${maxEvents}) c
          ) o
          WHERE q.project_id = o.project_id AND q.id <= o.below`
          : await tx`
          DELETE FROM quarantine q USING (
            SELECT p AS project_id, (SELECT id FROM quarantine i WHERE i.project_id = p ORDER BY id DESC OFFSET ${maxEvents} LIMIT 1) AS below
            FROM unnest(${projects as string[]}::uuid[]) AS p
          ) o
          WHERE q.project_id = o.project_id AND q.id <= o.below`;
      return old.count + over.count;
    }) as Promise<number | null>;
  }
}
