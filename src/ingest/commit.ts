// The last stage both endpoints share: reserve quota, hand the rows to the sink, and answer 202
// only once they are committed.
import { HttpError } from '../base/errors.js';
import type { DerivedBytes } from '../limits/body-budget.js';
import type { Reply } from '../http/server.js';
import type { Quota } from '../limits/quota.js';
import type { Channel } from '../base/model.js';
import type { BatchResult } from '../pipeline/batch.js';
import { MAX_DIAGNOSTICS } from '../pipeline/diagnostics.js';
import type { QuarantineBudget } from '../quality/quarantine-budget.js';
import type { EventSink, WriteOutcome, WriteTarget } from '../writer/sink.js';

export interface ResponseBody {
  accepted: number;
  rejected: number;
  not_consumed_duplicated: number;
  stored_not_billed: number;
  diagnostics_truncated: boolean;
  diagnostics: BatchResult['diagnostics'];
}

export function responseBody(b: BatchResult, storedNotBilled: number): ResponseBody {
  return {
    accepted: b.accepted,
    rejected: b.rejected,
    not_consumed_duplicated: b.duplicated,
    stored_not_billed: storedNotBilled,
    diagnostics_truncated: b.diagnosticsTruncated,
    diagnostics: b.diagnostics,
  };
}

/**
 * Where the rows go (the writer's target: the connection bills messenger actions, verified profiles replace stored
 * ones), and their channel.
 */
export interface CommitTarget extends WriteTarget {
  channel: Channel;
}

export interface CommitDeps {
  quota: Pick<Quota, 'check' | 'reserve' | 'settle' | 'release'>;
  sink: EventSink;
  /** What requests derived from their bodies, counted against MAX_INFLIGHT_BODY_BYTES per project. */
  derived: DerivedBytes;
  quarantineBudget: Pick<QuarantineBudget, 'admit' | 'drop'>;
  /** After every batch, committed (with its outcome) or rejected whole (null). */
  onOutcome?: (target: CommitTarget, batch: BatchResult, outcome: WriteOutcome | null) => void;
}

/**
 * The batch without its quarantine, which the project's QUARANTINE_MAX_BYTES has no room for. The
 * warning concerns the whole request, so it comes first (the diagnostics' last gives way if need be).
 */
function withoutQuarantine(b: BatchResult): BatchResult {
  const full = {
    event_id: null,
    code: 'quarantine_full' as const,
    severity: 'warning' as const,
    path: 'quarantine',
    message: `the project's quarantine is full (QUARANTINE_MAX_BYTES); ${b.quarantineCount} rejected events were not kept`,
  };
  const diagnostics = [full, ...b.diagnostics];
  const cut = diagnostics.length > MAX_DIAGNOSTICS;
  if (cut) diagnostics.length = MAX_DIAGNOSTICS;
  const diagnosticCounts = { ...b.diagnosticCounts, 'quarantine_full/warning': 1 };
  return {
    ...b,
    quarantine: new Uint8Array(0),
    quarantineCount: 0,
    quarantineCodes: {},
    diagnostics,
    diagnosticCounts,
    diagnosticsTruncated: b.diagnosticsTruncated || cut,
  };
}

const OVER_SHARE =
  "The service, or this project's share of it, holds more request data than it may at once; retry after the delay in Retry-After. Nothing of this request was stored.";

/** Before any work on a body of `declared` bytes: a project already at its share of MAX_INFLIGHT_BODY_BYTES waits. */
export function checkRoom(deps: CommitDeps, projectId: string, declared = 0): void {
  if (!deps.derived.roomFor(projectId, declared))
    throw new HttpError('overloaded', { message: OVER_SHARE, retryAfterS: 1 });
}

export async function commitBatch(deps: CommitDeps, result: BatchResult, t: CommitTarget): Promise<Reply> {
  let batch = result;
  // What this request holds until the commit settles is counted before anything is awaited.
  let derived =
    batch.rows.byteLength +
    batch.summary.byteLength +
    batch.sessions.byteLength +
    batch.quarantine.byteLength +
    batch.inflatedBytes;
  if (!deps.derived.take(t.projectId, derived))
    throw new HttpError('overloaded', { message: OVER_SHARE, retryAfterS: 1 });
  try {
    if (batch.quarantineCount > 0 && !(await deps.quarantineBudget.admit(t.projectId, batch.quarantine.byteLength))) {
      deps.quarantineBudget.drop(t.projectId, batch.quarantineCount);
      deps.derived.release(t.projectId, batch.quarantine.byteLength);
      derived -= batch.quarantine.byteLength;
      batch = withoutQuarantine(batch);
    }
    // Resending a batch whose every event was rejected can never succeed: 400 with the normal body
    // (once its rejected events are in quarantine).
    const status = batch.accepted === 0 ? 400 : 202;
    if (batch.accepted === 0 && batch.quarantineCount === 0) {
      deps.onOutcome?.(t, batch, null);
      return { status, body: responseBody(batch, 0) };
    }
    const reservation = await deps.quota.reserve(t.projectId, batch.accepted);
    let outcome: WriteOutcome;
    try {
      outcome = await deps.sink.submit({ target: t, batch });
    } catch (err) {
      deps.quota.release(reservation);
      throw err;
    }
    deps.quota.settle(reservation, outcome.billed);
    deps.onOutcome?.(t, batch, outcome);
    return { status, body: responseBody(batch, outcome.storedNotBilled) };
  } finally {
    deps.derived.release(t.projectId, derived);
  }
}
