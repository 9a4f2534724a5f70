// One group commit: a transaction on one writer connection that stores the rows of several
// requests, settles their billing, writes user and bot rows, and says per request what was stored.
import type { Sql } from '../db/connect.js';
import { latestBots } from './bots.js';
import { copyIn, type CopyIn, type Session, SessionLost, sameSession } from './copy-in.js';
import type { WriteOutcome, WriteRequest } from './sink.js';
import { BEGIN_COPY_EVENTS, BEGIN_COPY_STAGING, insertStaged, recordSightings, settleBilling, updateBots, upsertUsers } from './statements.js';
import type { UserRows } from './users.js';

export interface Committed {
  outcomes: WriteOutcome[];
  rows: number;
}

/** Lets the caller see which session a transaction runs on while it runs (to cancel it). */
export interface InFlight {
  copy: CopyIn | null;
}

/**
 * Runs the transaction. `staged`: the rows go through the connection's staging table and only those
 * not stored yet are inserted (after a plain COPY met stored rows).
 */
export async function commitRequests(sql: Sql, batch: readonly WriteRequest[], staged: boolean, shard: number, users: UserRows, inFlight: InFlight): Promise<Committed> {
  // Three round trips: BEGIN with the COPY statement; the rows; then billing, profiles and COMMIT
  // together. postgres.js sends a query only when it is first awaited, so each later statement is
  // created with execute(), in order: an `await` inside a helper would let COMMIT overtake it.
  // Each must run in the COPY's session: postgres.js runs a statement queued across a reconnect on
  // a new session, outside this transaction, so the billing statement checks and every result is.
  const data = batch.length === 1 ? batch[0]!.rows : Buffer.concat(batch.map((r) => r.rows));
  inFlight.copy = copyIn(sql, staged ? BEGIN_COPY_STAGING : BEGIN_COPY_EVENTS, data);
  const session: Session = await inFlight.copy.done;

  let stored: number[];
  if (!staged) stored = batch.map((r) => r.rowCount);
  else {
    const bounds: number[] = [];
    let next = 1;
    for (const r of batch) {
      bounds.push(next);
      next += r.rowCount;
    }
    stored = batch.map(() => 0);
    for (const c of await insertStaged(sql, bounds, session)) stored[c.req] = c.inserted;
  }

  const claims = batch.flatMap((r, req) => r.actions.map((a) => ({ projectId: r.projectId, key: a.key, connection: r.connection, eventId: a.eventId, req })));
  const perProject = new Map<string, number>();
  batch.forEach((r, i) => perProject.set(r.projectId, (perProject.get(r.projectId) ?? 0) + stored[i]!));
  const settled = settleBilling(sql, claims, [...perProject].map(([projectId, n]) => ({ projectId, stored: n })), shard, session);
  const statements: Promise<unknown>[] = [settled];
  const userRows = users.select(batch);
  if (userRows.sightings.ids.length > 0) statements.push(recordSightings(sql, userRows.sightings.projects, userRows.sightings.ids).execute());
  if (userRows.partial.length > 0) statements.push(upsertUsers(sql, userRows.partial, false).execute());
  if (userRows.authoritative.length > 0) statements.push(upsertUsers(sql, userRows.authoritative, true).execute());
  const bots = latestBots(batch);
  if (bots.length > 0) statements.push(updateBots(sql, bots).execute());
  // Pipelined: COMMIT only reports ROLLBACK if a statement before it failed, so check each.
  const commit = sql.unsafe('COMMIT').execute();
  const results = await Promise.allSettled([...statements, commit]);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  // A COMMIT that ran on another session committed nothing of ours.
  if (!sameSession((results[results.length - 1] as PromiseFulfilledResult<{ state: Session }>).value.state, session)) throw new SessionLost();
  users.committed(userRows);

  const unbilled = await settled;
  const outcomes = batch.map((r, i) => {
    const n = unbilled.get(i) ?? 0;
    return { stored: stored[i]!, billed: stored[i]! - n, storedNotBilled: n, redelivered: r.rowCount - stored[i]! };
  });
  return { outcomes, rows: batch.reduce((n, r) => n + r.rowCount, 0) };
}
