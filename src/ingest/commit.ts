// The last stage both endpoints share: reserve quota, hand the rows to the sink, and answer 202
// only once they are committed.
import type { Reply } from '../http/server.js';
import type { Quota } from '../limits/quota.js';
import type { Channel } from '../model.js';
import type { BatchResult } from '../pipeline/batch.js';
import type { EventSink, WriteOutcome } from '../writer/sink.js';

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

export interface CommitTarget {
  channel: Channel;
  projectId: string;
  botId: string;
  /** Who reported the events, for billing messenger actions: "token:<id>" or "webapp:<botId>". */
  connection: string;
  receivedAt: string;
  /** Profiles from verified initData replace stored ones; users[] profiles fill in. */
  authoritativeProfiles: boolean;
}

export interface CommitDeps {
  quota: Quota;
  sink: EventSink;
  /** After every batch, committed (with its outcome) or rejected whole (null). */
  onOutcome?: (target: CommitTarget, batch: BatchResult, outcome: WriteOutcome | null) => void;
}

export async function commitBatch(deps: CommitDeps, batch: BatchResult, t: CommitTarget): Promise<Reply> {
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
    outcome = await deps.sink.submit({
      projectId: t.projectId,
      botId: t.botId,
      connection: t.connection,
      receivedAt: t.receivedAt,
      rows: batch.rows,
      rowCount: batch.rowCount,
      actions: batch.actions,
      userIds: batch.userIds,
      profiles: batch.profiles,
      authoritativeProfiles: t.authoritativeProfiles,
      bot: batch.bot,
      recheck: batch.recheck,
      quarantine: batch.quarantine,
      quarantineCount: batch.quarantineCount,
    });
  } catch (err) {
    deps.quota.release(reservation);
    throw err;
  }
  deps.quota.settle(reservation, outcome.billed);
  deps.onOutcome?.(t, batch, outcome);
  return { status, body: responseBody(batch, outcome.storedNotBilled) };
}
