// The lake as a query reads it: the published files of a project, and the rows the watermark has not reached yet
// (received since, or before the history's end) from the database, both taken under LAKE_PUBLISH_LOCK shared, so
// that together they hold every stored row once.
import { basename } from 'node:path';
import type { Sql } from '../db/connect.js';
import { LAKE_PUBLISH_LOCK } from '../db/locks.js';
import { literal } from './engine.js';
import { copyToCsv, filesUnder, readLakeId } from './files.js';
import { isPublished, parseFile, projectDir, STAMP_SQL } from './layout.js';
import { EVENT_CSV_SELECT } from './rows.js';

export interface LakeView {
  /** Published Parquet files of the project's events. */
  files: string[];
  /** The rows not in those files, as CSV (EVENT_CSV_SELECT's columns); null when there are none. */
  tail: string | null;
}

/**
 * The project's view, its database rows limited by `where` (SQL over events' columns, no parameters). Null when the
 * directory holds no lake this database knows (none yet, or another's).
 */
export async function lakeView(
  sql: Sql,
  dir: string,
  projectId: string,
  where: string,
  tailFile: string,
  timeoutMs: number,
): Promise<LakeView | null> {
  const lakeId = readLakeId(dir);
  if (lakeId === null) return null;
  const conn = await sql.reserve();
  try {
    await conn.unsafe('BEGIN');
    try {
      await conn.unsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(timeoutMs))}`);
      // The literals below quote values clients chose: backslashes in them stay what they are.
      await conn.unsafe('SET LOCAL standard_conforming_strings = on');
      await conn`SELECT pg_advisory_xact_lock_shared(${LAKE_PUBLISH_LOCK})`;
      const [lake] = await conn<{ before: string; history: string | null; exported: string; historyIso: string }[]>`
        SELECT ${conn.unsafe(STAMP_SQL('exported_before'))} AS before,
               CASE WHEN history_from = '-infinity' THEN NULL ELSE ${conn.unsafe(STAMP_SQL('history_from'))} END AS history,
               exported_before::text AS exported, history_from::text AS "historyIso"
        FROM lake_dirs WHERE lake_id = ${lakeId}::uuid`;
      if (lake === undefined) {
        await conn.unsafe('ROLLBACK');
        return null;
      }
      const published = { exportedBefore: lake.before, historyFrom: lake.history };
      const files = filesUnder(projectDir(dir, 'events', projectId)).filter((f) => {
        const parsed = parseFile(basename(f));
        return parsed !== null && isPublished(parsed, published);
      });
      const outside =
        lake.history === null
          ? `received_at >= ${literal(lake.exported)}::timestamptz`
          : `(received_at >= ${literal(lake.exported)}::timestamptz OR received_at < ${literal(lake.historyIso)}::timestamptz)`;
      const bytes = await copyToCsv(
        conn as unknown as Sql,
        `${EVENT_CSV_SELECT} WHERE project_id = ${literal(projectId)}::uuid AND ${outside} AND (${where})`,
        tailFile,
      );
      await conn.unsafe('COMMIT');
      return { files, tail: bytes > 0 ? tailFile : null };
    } catch (err) {
      await conn.unsafe('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    conn.release();
  }
}
