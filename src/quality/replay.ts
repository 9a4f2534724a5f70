// Replay of quarantined events: each runs through the current pipeline and tracking plan as if it
// arrived now on its original channel and connection. Accepted events are stored (billed by the
// usual rules, deduplicated by eventId) and leave quarantine; those already stored count as
// duplicated and leave too; the others stay with their new reasons. A dry run changes nothing.
import type { QualityStore, QuarantineFilter, QuarantineRow } from './store.js';
import type { Sql } from '../db/connect.js';
import type { Channel } from '../base/model.js';
import type { BatchContext, Rechecked } from '../pipeline/batch.js';
import type { Diagnostic } from '../pipeline/diagnostics.js';
import type { EventSink, WriteOutcome } from '../writer/sink.js';
import type { PlanCache } from './plan-cache.js';

export interface ReplayResult {
  replayed: number;
  accepted: number;
  stillRejected: number;
  duplicated: number;
}

/** What a replay asks of the allowance's reservations (limits/quota.ts), as an ingestion request does. */
export interface Reservations {
  reserve(projectId: string, events: number): Promise<{ projectId: string; events: number }>;
  settle(reservation: { projectId: string; events: number }, billed: number): void;
  release(reservation: { projectId: string; events: number }): void;
}

export interface ReplayDeps {
  sql: Sql;
  store: QualityStore;
  sink: EventSink;
  quota: Reservations;
  plans: PlanCache;
  /** The project's suppressed users: their quarantined events are refused again (user_suppressed), never stored. */
  suppressed: (projectId: string) => Promise<BigInt64Array | null>;
  /** Checks the events again off the main thread. */
  recheck: (
    items: { event: string; truncated: boolean; ctx: BatchContext; webappUser: string | null }[],
  ) => Promise<Rechecked[]>;
  onReplayed?: (r: ReplayResult) => void;
}

/** Events replayed per request to the admin API; the rest wait for the next one. */
export const REPLAY_MAX = 10_000;
/** Events checked per worker task. */
const RECHECK_CHUNK = 500;

interface Checked extends Rechecked {
  row: QuarantineRow;
}

export async function replay(
  deps: ReplayDeps,
  projectId: string,
  filter: QuarantineFilter,
  dryRun: boolean,
): Promise<ReplayResult> {
  const rows = await deps.store.quarantined(projectId, filter, REPLAY_MAX);
  const [plan, suppressed] = await Promise.all([deps.plans.get(projectId), deps.suppressed(projectId)]);
  const bots = new Map(
    (
      await deps.sql<{ bot_id: string; messenger_bot_id: string | null }[]>`
    SELECT bot_id, messenger_bot_id FROM bots WHERE bot_id = ANY(${[...new Set(rows.map((r) => r.botId))]}::uuid[])`
    ).map((b) => [b.bot_id, b.messenger_bot_id]),
  );
  const receivedAt = new Date().toISOString();
  const items = rows.map((row) => ({
    event: row.event,
    truncated: row.truncated,
    webappUser: row.userId,
    ctx: {
      projectId,
      botId: row.botId,
      receivedAt,
      channel: row.channel as Channel,
      connection: row.connectionId,
      userId: row.userId,
      messengerBotId: bots.get(row.botId) ?? null,
      plan,
      suppressed,
    } satisfies BatchContext,
  }));
  const checked: Checked[] = [];
  for (let i = 0; i < items.length; i += RECHECK_CHUNK) {
    const results = await deps.recheck(items.slice(i, i + RECHECK_CHUNK));
    results.forEach((r, k) => {
      checked.push({ ...r, row: rows[i + k]! });
    });
  }
  const seen = new Set<string>();
  const result: ReplayResult = { replayed: rows.length, accepted: 0, stillRejected: 0, duplicated: 0 };
  const accepted: Checked[] = [];
  const duplicated: number[] = [];
  const stillRejected: { id: number; diagnostics: Diagnostic[] }[] = [];
  for (const c of checked) {
    const row = c.row;
    if (c.batch === null || c.batch.accepted === 0) stillRejected.push({ id: row.id, diagnostics: c.diagnostics });
    else if (c.eventId !== null && seen.has(c.eventId)) duplicated.push(row.id);
    else {
      if (c.eventId !== null) seen.add(c.eventId);
      accepted.push(c);
    }
  }

  if (dryRun) {
    const ids = accepted.map((a) => a.eventId!);
    const stored = new Set(
      (
        await deps.sql<
          { event_id: string }[]
        >`SELECT event_id FROM events WHERE project_id = ${projectId} AND event_id = ANY(${ids}::uuid[])`
      ).map((r) => r.event_id),
    );
    const redelivered = accepted.filter((a) => stored.has(a.eventId!)).length;
    return {
      replayed: rows.length,
      accepted: accepted.length - redelivered,
      stillRejected: stillRejected.length,
      duplicated: duplicated.length + redelivered,
    };
  }

  // One request per event, so each learns whether it was stored or already there; the writer
  // still commits them together.
  const settled = await Promise.allSettled(
    accepted.map(async (a): Promise<WriteOutcome> => {
      const b = a.batch!;
      const reservation = await deps.quota.reserve(projectId, b.accepted);
      try {
        const o = await deps.sink.submit({
          target: {
            projectId,
            botId: a.row.botId,
            connection: a.row.connectionId,
            receivedAt,
            authoritativeProfiles: false,
          },
          // A webapp event's user is its verified initData user; replayed events leave no profile.
          batch: { ...b, userIds: a.row.userId !== null ? [a.row.userId] : b.userIds, profiles: [], bot: null },
        });
        deps.quota.settle(reservation, o.billed);
        return o;
      } catch (err) {
        deps.quota.release(reservation);
        throw err;
      }
    }),
  );
  // Events stored before a failure (the allowance running out mid-replay, say) leave the
  // quarantine all the same; the others stay for the next replay.
  const stored: Checked[] = [];
  let failure: unknown = null;
  settled.forEach((s, i) => {
    if (s.status === 'rejected') {
      failure ??= s.reason;
      return;
    }
    stored.push(accepted[i]!);
    if (s.value.redelivered > 0) duplicated.push(accepted[i]!.row.id);
    else result.accepted++;
  });
  await deps.store.release(projectId, [...stored.map((a) => a.row.id), ...duplicated]);
  await deps.store.rediagnose(projectId, stillRejected);
  result.duplicated = duplicated.length;
  result.stillRejected = stillRejected.length;
  deps.onReplayed?.(result);
  if (failure !== null) throw failure;
  return result;
}
