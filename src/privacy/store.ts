// Erasure requests and suppressions in PostgreSQL: what the admin API reads and writes. A request and its
// suppressions are one transaction, and so is every change to the suppressions with the version that tells
// each instance to re-read them.
import { createHash } from 'node:crypto';
import type { Sql, Tx } from '../db/connect.js';

export type ErasureStatus = 'pending' | 'running' | 'done' | 'failed';

export interface Erasure {
  erasureId: string;
  status: ErasureStatus;
  /** Kept while the erasure runs and while its users stay suppressed; otherwise null (count and digest remain). */
  userIds: string[] | null;
  userCount: number;
  /** SHA-256 of the sorted ids, one per line: proves which ids were erased without keeping them. */
  digest: string;
  suppress: boolean;
  deleted: { events: number; users: number; quarantine: number; lakeFiles: number };
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error?: string;
}

export interface Suppression {
  userId: string;
  erasureId: string | null;
  createdAt: string;
}

interface ErasureRow {
  erasure_id: string;
  status: ErasureStatus;
  user_ids: string[] | null;
  user_count: number;
  digest: string;
  suppress: boolean;
  deleted_events: string;
  deleted_users: string;
  deleted_quarantine: string;
  lake_files: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/**
 * The platformUserId a bot_api event names in its quarantined body, as SQL over the columns `event` and
 * `truncated`: the top-level field of the JSON; of a body cut to 64 KiB (no longer JSON), the first
 * `"platformUserId":` of its text (JSON.stringify writes no spaces; a string or a number).
 */
export const USER_IN_QUARANTINE = `(CASE WHEN NOT truncated THEN event::jsonb->>'platformUserId'
  ELSE substring(event FROM '"platformUserId":"?(-?[0-9]{1,19})[",}]') END)`;

/** At most this many user ids per erasure request. */
export const MAX_ERASURE_USERS = 5000;

export function digestOf(userIds: readonly string[]): string {
  const sorted = [...userIds].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  return `sha256:${createHash('sha256').update(sorted.join('\n')).digest('hex')}`;
}

function erasureOf(r: ErasureRow): Erasure {
  return {
    erasureId: r.erasure_id,
    status: r.status,
    userIds: r.user_ids?.map(String) ?? null,
    userCount: r.user_count,
    digest: r.digest,
    suppress: r.suppress,
    deleted: {
      events: Number(r.deleted_events),
      users: Number(r.deleted_users),
      quarantine: Number(r.deleted_quarantine),
      lakeFiles: r.lake_files,
    },
    createdAt: r.created_at.toISOString(),
    startedAt: r.started_at?.toISOString() ?? null,
    finishedAt: r.finished_at?.toISOString() ?? null,
    ...(r.error !== null ? { error: r.error } : {}),
  };
}

const COLUMNS = `erasure_id, status, user_ids::text[] AS user_ids, user_count, digest, suppress,
  deleted_events::text, deleted_users::text, deleted_quarantine::text, lake_files, error, created_at, started_at, finished_at`;

/** Tells every instance to re-read the project's suppressions. */
async function bump(tx: Tx, projectId: string): Promise<void> {
  await tx`
    INSERT INTO suppression_versions AS v (project_id, version) VALUES (${projectId}, 1)
    ON CONFLICT (project_id) DO UPDATE SET version = v.version + 1`;
}

export class PrivacyStore {
  constructor(private readonly sql: Sql) {}

  /** `userIds`: distinct decimal ids. With `suppress`, the users are suppressed in the same transaction. */
  async request(projectId: string, userIds: string[], suppress: boolean): Promise<Erasure> {
    return this.sql.begin(async (tx) => {
      const [row] = await tx<ErasureRow[]>`
        INSERT INTO erasures (project_id, user_ids, user_count, digest, suppress)
        VALUES (${projectId}, ${userIds}::bigint[], ${userIds.length}, ${digestOf(userIds)}, ${suppress})
        RETURNING ${tx.unsafe(COLUMNS)}`;
      if (suppress) {
        await tx`
          INSERT INTO suppressions (project_id, user_id, erasure_id)
          SELECT ${projectId}, u, ${row!.erasure_id} FROM unnest(${userIds}::bigint[]) AS u
          ON CONFLICT (project_id, user_id) DO UPDATE SET erasure_id = excluded.erasure_id`;
        await bump(tx, projectId);
      }
      return erasureOf(row!);
    }) as Promise<Erasure>;
  }

  async get(projectId: string, erasureId: string): Promise<Erasure | null> {
    const [row] = await this.sql<ErasureRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM erasures WHERE project_id = ${projectId} AND erasure_id = ${erasureId}`;
    return row === undefined ? null : erasureOf(row);
  }

  /** Newest first; `before` is the `next` of the previous page. */
  async list(
    projectId: string,
    limit: number,
    before: string | undefined,
  ): Promise<{ items: Erasure[]; next: string | null }> {
    // The API checked the cursor (decodeCursor) before asking.
    const cursor = before === undefined ? null : decodeCursor(before);
    const rows = await this.sql<(ErasureRow & { at: string })[]>`
      SELECT ${this.sql.unsafe(COLUMNS)}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
      FROM erasures
      WHERE project_id = ${projectId}
        ${cursor === null ? this.sql`` : this.sql`AND (created_at, erasure_id) < (${cursor.at}::timestamptz, ${cursor.id}::uuid)`}
      ORDER BY created_at DESC, erasure_id DESC LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit).map(erasureOf);
    const last = rows.length > limit ? rows[limit - 1]! : null;
    return { items, next: last === null ? null : encodeCursor(last.at, last.erasure_id) };
  }

  async suppressions(
    projectId: string,
    limit: number,
    after: string | undefined,
  ): Promise<{ items: Suppression[]; next: string | null }> {
    const rows = await this.sql<{ user_id: string; erasure_id: string | null; created_at: Date }[]>`
      SELECT user_id::text, erasure_id, created_at FROM suppressions
      WHERE project_id = ${projectId} ${after === undefined ? this.sql`` : this.sql`AND user_id > ${after}::bigint`}
      ORDER BY user_id LIMIT ${limit + 1}`;
    const items = rows
      .slice(0, limit)
      .map((r) => ({ userId: r.user_id, erasureId: r.erasure_id, createdAt: r.created_at.toISOString() }));
    return { items, next: rows.length > limit ? items.at(-1)!.userId : null };
  }

  /**
   * Lifts a user's suppression: false when there was none. The erasure that suppressed them forgets their id once it
   * is done (while it runs, it still needs it).
   */
  async lift(projectId: string, userId: string): Promise<boolean> {
    return (await this.sql.begin(async (tx) => {
      const [gone] = await tx<{ erasure_id: string | null }[]>`
        DELETE FROM suppressions WHERE project_id = ${projectId} AND user_id = ${userId}::bigint RETURNING erasure_id`;
      if (gone === undefined) return false;
      await bump(tx, projectId);
      // Every finished erasure that kept the id for a suppression (a user suppressed twice is named by both).
      await tx`
        UPDATE erasures SET user_ids = nullif(array_remove(user_ids, ${userId}::bigint), '{}')
        WHERE project_id = ${projectId} AND status IN ('done', 'failed') AND user_ids @> ARRAY[${userId}::bigint]`;
      return true;
    })) as boolean;
  }
}

/** A page's end: the last erasure's created_at in UTC to the microsecond, and its id. */
function encodeCursor(at: string, id: string): string {
  return Buffer.from(`${at}|${id}`).toString('base64url');
}

const CURSOR =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** null: not a cursor this store wrote. */
export function decodeCursor(s: string): { at: string; id: string } | null {
  if (s.length > 200) return null;
  const text = Buffer.from(s, 'base64url').toString();
  if (!CURSOR.test(text)) return null;
  const [at, id] = text.split('|') as [string, string];
  // Well-formed yet impossible (month 13): not a cursor either.
  if (Number.isNaN(Date.parse(`${at.slice(0, 23)}Z`))) return null;
  return { at, id };
}
