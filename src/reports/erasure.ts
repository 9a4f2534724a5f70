// The reports' part of an erasure: the users' records in report summaries not folded yet, then who they were to the
// reports (their retention cells, the days and weeks they were active, first day and campaign, payments): the counts
// stay, as usage does. Then
// their mini-app sessions, and what those counted in the sessions report.
import { type ErasureJob, type ErasurePart, type ErasureStep, STEP_LOCK_TIMEOUT } from '../db/erasure.js';
import { REPORTS_FOLD_LOCK } from '../db/locks.js';
import type { Tx } from '../db/connect.js';
import type { Logger } from '../base/log.js';
import { SessionSummaryFormatError, sessionsWithoutUsers } from '../pipeline/session-summary.js';
import { SummaryFormatError, withoutUsers } from '../pipeline/summary.js';
import { Turns } from '../base/turns.js';
import { ERASE_RETENTION } from './retention-sql.js';
import { ERASE_SESSIONS } from './session-sql.js';

/** Report summaries (one a commit, up to ~1 KiB an event) rewritten per step: at most this many, and bytes. */
const SUMMARIES_SLICE = 256;
const SUMMARIES_SLICE_BYTES = 8 * 1024 * 1024;

type Step =
  | { phase: 'summaries'; after: string; until: string | null }
  | { phase: 'reports' }
  | { phase: 'report_active'; day: string | null }
  | { phase: 'sessions' };

export function reportsErasure(log: Logger): ErasurePart {
  return {
    start: { phase: 'summaries', after: '0', until: null },
    phases: ['summaries', 'reports', 'report_active', 'sessions'],
    step: (tx, job, at) => step(tx, job, at as ErasureStep & Step, log),
  };
}

async function step(tx: Tx, j: ErasureJob, s: Step, log: Logger): Promise<ErasureStep | null> {
  const ids = j.userIds;
  // After any fold still running (it may have read their events before they were deleted). A fold holds the lock for
  // one window, and a waiter is served before the aggregator's next try: waiting past the step's lock timeout is safe
  // here, and failing for it would spend the erasure's attempts on a lock about to be free.
  await tx`SET LOCAL lock_timeout = '60s'`;
  // The lock a fold takes before its snapshot (src/reports/aggregator.ts); the advisory one, as an older build's fold.
  await tx`LOCK TABLE report_watermark IN EXCLUSIVE MODE`;
  await tx`SELECT pg_advisory_xact_lock(${REPORTS_FOLD_LOCK})`;
  // The eraser's bound on other locks again, once the fold's lock is held.
  await tx.unsafe(`SET LOCAL lock_timeout = '${STEP_LOCK_TIMEOUT}'`);
  if (s.phase === 'summaries') {
    // The report summaries of commits not folded yet name them too (src/pipeline/summary.ts): their records go, or a
    // later fold would count them again. Those that exist now, a few MiB a step; user ids past 2^53 are never in one.
    const until =
      s.until ??
      (await tx<{ max: string | null }[]>`SELECT max(summary_id)::text AS max FROM report_summaries`)[0]!.max;
    const rows =
      until === null
        ? []
        : await tx<{ id: string; summary: Buffer; sessions: Buffer | null }[]>`
            WITH slice AS (
              SELECT summary_id,
                     sum(octet_length(summary) + coalesce(octet_length(sessions), 0)) OVER (ORDER BY summary_id) AS upto
              FROM report_summaries WHERE summary_id > ${s.after}::bigint AND summary_id <= ${until}::bigint
              ORDER BY summary_id LIMIT ${SUMMARIES_SLICE}
            )
            SELECT r.summary_id::text AS id, r.summary, r.sessions FROM slice JOIN report_summaries r USING (summary_id)
            WHERE slice.upto <= ${SUMMARIES_SLICE_BYTES} OR slice.summary_id = (SELECT min(summary_id) FROM slice)
            ORDER BY r.summary_id`;
    const users = new Set(ids.map(Number).filter(Number.isSafeInteger));
    const turn = new Turns();
    for (const r of rows) {
      // A step rewrites up to SUMMARIES_SLICE_BYTES on the main thread: its sockets are read between summaries.
      const pause = turn.take();
      if (pause) await pause;
      let kept: Uint8Array | null;
      try {
        kept = withoutUsers(r.summary, j.projectId, users);
      } catch (err) {
        // Unreadable, it could never be counted: gone, as the aggregator would drop it.
        if (!(err instanceof SummaryFormatError)) throw err;
        log.error({ summaryId: r.id, err: err.message }, 'an unreadable report summary was deleted');
        kept = null;
      }
      let keptSessions: Uint8Array | null = null;
      try {
        keptSessions = r.sessions === null ? null : sessionsWithoutUsers(r.sessions, j.projectId, users);
      } catch (err) {
        if (!(err instanceof SessionSummaryFormatError)) throw err;
        log.error({ summaryId: r.id, err: err.message }, 'unreadable session records were deleted');
      }
      if (kept === null) await tx`DELETE FROM report_summaries WHERE summary_id = ${r.id}::bigint`;
      else if (
        kept.byteLength !== r.summary.byteLength ||
        (keptSessions?.byteLength ?? 0) !== (r.sessions?.byteLength ?? 0)
      )
        await tx`
          UPDATE report_summaries SET summary = ${Buffer.from(kept)},
                 sessions = ${keptSessions === null ? null : Buffer.from(keptSessions)}
          WHERE summary_id = ${r.id}::bigint`;
    }
    return rows.length === 0 ? { phase: 'reports' } : { phase: 'summaries', after: rows.at(-1)!.id, until };
  }
  if (s.phase === 'reports') {
    await eraseFromReports(tx, j.projectId, ids);
    return { phase: 'sessions' };
  }
  if (s.phase === 'sessions') {
    await tx.unsafe(ERASE_SESSIONS, [j.projectId, ids]);
    // Their rows there are at 0 now (and on days a session moved away from): gone, the ids with them.
    await tx`DELETE FROM report_session_users WHERE project_id = ${j.projectId} AND user_id = ANY(${ids}::bigint[])`;
    return null;
  }
  // report_active: where an erasure an older build began resumes. That build took report_users before the days;
  // the user may have come back and been folded since, as a new user with cells: all of it goes, as in `reports`.
  await eraseFromReports(tx, j.projectId, ids);
  return { phase: 'sessions' };
}

/**
 * Who the users were to the reports, in one transaction: their retention cells (read through report_users, before it
 * goes), the days and weeks they were active, first day and campaign; their payments stay counted, without them. Were
 * the days left for a later step, a fold meanwhile (their events may keep coming: no suppression) would take them for
 * a new user and count a day twice.
 */
async function eraseFromReports(tx: Tx, projectId: string, ids: string[]): Promise<void> {
  await tx.unsafe(ERASE_RETENTION, [projectId, ids]);
  await tx`DELETE FROM report_users WHERE project_id = ${projectId} AND user_id = ANY(${ids}::bigint[])`;
  await tx`UPDATE report_payments SET user_id = NULL WHERE project_id = ${projectId} AND user_id = ANY(${ids}::bigint[])`;
}
