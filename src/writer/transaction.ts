// One group commit: a transaction on one writer connection that stores the rows of several
// requests, settles their billing, writes user and bot rows, and says per request what was stored.
// The usual commit is a single round trip: BEGIN and COPY, the rows, then every statement after it
// and COMMIT, all in one write.
import { latestBots } from './bots.js';
import type { WriteOutcome, WriteRequest } from './sink.js';
import {
  BEGIN_COPY_EVENTS,
  BEGIN_COPY_STAGING,
  COPY_QUARANTINE,
  billingSql,
  insertStagedSql,
  insertSummarySql,
  ledgerSql,
  previousMonthStart,
  receivedRange,
  type Shard,
  sightingsSql,
  storedBeforeSql,
  type StoredCount,
  updateBotsSql,
  upsertUsersSql,
} from './statements.js';
import type { UserRows } from './users.js';
import { PgError, type QueryResult, type ScriptPart, type WireConnection } from './wire.js';

export interface Committed {
  outcomes: WriteOutcome[];
  rows: number;
}

/** The first error of a script's queries, or null. */
function firstError(results: QueryResult[]): PgError | null {
  for (const r of results) if (r.error !== null) return r.error;
  return null;
}

/**
 * Runs the transaction. `staged`: the rows go through the connection's staging table and only those
 * not stored yet are inserted (after a plain COPY met stored rows); that costs a second round trip,
 * since what is billed depends on what was inserted. On any error the transaction is left open for
 * the caller to roll back; the error thrown is the first the database reported.
 */
export async function commitRequests(
  conn: WireConnection,
  batch: readonly WriteRequest[],
  staged: boolean,
  shard: Shard,
  users: UserRows,
): Promise<Committed> {
  const data = batch.map((r) => r.batch.rows);
  // Rows of this transaction go to the partitions of their months of receipt; what they are checked
  // against reaches back to the start of the month before the earliest.
  const received = receivedRange(batch.map((r) => r.target.receivedAt));
  const since = previousMonthStart(received.from);

  let stored: number[];
  if (!staged) stored = batch.map((r) => r.batch.rowCount);
  else {
    const bounds: number[] = [];
    let next = 1;
    for (const r of batch) {
      bounds.push(next);
      next += r.batch.rowCount;
    }
    const results = await conn.script([
      { sql: BEGIN_COPY_STAGING },
      { copyData: data },
      { sql: insertStagedSql(bounds, since) },
    ]);
    const err = firstError(results);
    if (err !== null) throw err;
    stored = batch.map(() => 0);
    for (const [req, inserted] of results[1]!.statements[0]!.rows) stored[Number(req)] = Number(inserted);
  }

  const claims = batch.flatMap(({ target, batch: b }, req) =>
    b.actions.map((a) => ({
      projectId: target.projectId,
      key: a.key,
      connection: target.connection,
      eventId: a.eventId,
      req,
    })),
  );
  const perProject = new Map<string, number>();
  batch.forEach(({ target }, i) => {
    perProject.set(target.projectId, (perProject.get(target.projectId) ?? 0) + stored[i]!);
  });
  const storedCounts: StoredCount[] = [...perProject].map(([projectId, n]) => ({ projectId, stored: n }));
  const statements: string[] = [];
  // Before anything else: events that may have been stored in an earlier month (a conflict if so).
  const recheck = staged
    ? []
    : batch.flatMap(({ target, batch: b }) => b.recheck.map((id) => [target.projectId, id] as const));
  if (recheck.length > 0)
    statements.push(
      storedBeforeSql(
        recheck.map(([p]) => p),
        recheck.map(([, id]) => id),
        since,
      ),
    );
  // Then the billing statement: its rows are the unbilled counts.
  const billingAt = statements.length;
  statements.push(
    claims.length > 0 ? billingSql(claims, storedCounts, shard, received) : ledgerSql(storedCounts, shard),
  );
  const userRows = users.select(batch);
  if (userRows.sightings.size > 0) statements.push(sightingsSql(userRows.sightings));
  if (userRows.partial.length > 0) statements.push(upsertUsersSql(userRows.partial, false));
  if (userRows.authoritative.length > 0) statements.push(upsertUsersSql(userRows.authoritative, true));
  const bots = latestBots(batch);
  if (bots.length > 0) statements.push(updateBotsSql(bots));
  if (!staged) {
    const summarized = batch.filter((r) => r.batch.summary.byteLength > 0);
    if (summarized.length > 0)
      statements.push(
        insertSummarySql(
          summarized.map((r) => r.batch.summary),
          summarized.map((r) => r.batch.sessions),
          receivedRange(summarized.map((r) => r.target.receivedAt)),
        ),
      );
  }
  statements.push('COMMIT');
  const tail = { sql: statements.join(';\n') };
  // Rejected events go to the quarantine in the same transaction as the rows.
  const quarantined = batch.filter((r) => r.batch.quarantineCount > 0);
  const quarantine: ScriptPart[] =
    quarantined.length === 0
      ? []
      : [{ sql: COPY_QUARANTINE }, { copyData: quarantined.map((r) => r.batch.quarantine) }];

  const results = staged
    ? await conn.script([...quarantine, tail])
    : await conn.script([{ sql: BEGIN_COPY_EVENTS }, { copyData: data }, ...quarantine, tail]);
  const err = firstError(results);
  if (err !== null) throw err;
  const last = results[results.length - 1]!;
  const commit = last.statements[last.statements.length - 1];
  if (commit?.tag !== 'COMMIT' || last.status !== 'I')
    throw new PgError(`the transaction ended with ${commit?.tag ?? 'nothing'}`, 'XX000', undefined, undefined);
  // A warning during COMMIT itself is the one a cancelled wait for the synchronous standby gives: committed here but
  // perhaps not on the standby a failover would promote, so not a 202. The client's retry is deduplicated against
  // this commit if the server survives, and stored again if it does not.
  if (last.warnedAt === last.statements.length - 1)
    throw new PgError(
      'the commit was not confirmed by the synchronous standby (its wait was cancelled)',
      '57014',
      undefined,
      undefined,
    );
  users.committed(userRows);

  const unbilled = new Map<number, number>();
  if (claims.length > 0)
    for (const [req, n] of last.statements[billingAt]!.rows)
      unbilled.set(Number(req), (unbilled.get(Number(req)) ?? 0) + Number(n));
  const outcomes = batch.map((r, i) => {
    const n = unbilled.get(i) ?? 0;
    return {
      stored: stored[i]!,
      billed: stored[i]! - n,
      storedNotBilled: n,
      redelivered: r.batch.rowCount - stored[i]!,
    };
  });
  return { outcomes, rows: batch.reduce((n, r) => n + r.batch.rowCount, 0) };
}
