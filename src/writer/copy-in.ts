// COPY ... FROM STDIN through postgres.js, settled on both outcomes, in the transaction it opens.
//
// Three traps, each seen here:
// - postgres.js resolves the query with the writable as soon as COPY starts; a server error after
//   CopyDone then reaches only the already-settled query and the writable never finishes
//   (porsager/postgres#1173). We hook the query's reject to see that error.
// - A BEGIN sent as its own query can be rejected with a dying connection while the COPY queued
//   behind it runs first on the next connection, outside any transaction. So BEGIN travels in the
//   same simple-query message as the COPY: both run on one session, in order, or neither runs.
// - On success the writable would destroy itself and send a stray CopyFail, which fails whatever
//   COPY is queued next on the connection (measured here: "COPY from stdin failed", 57014); its
//   auto-destroy is switched off.
import type { Sql } from '../db/connect.js';

/** A server session, as postgres.js reports it on every result: a new one after any reconnect. */
export interface Session {
  pid: number;
  secret: number;
}

export class SessionLost extends Error {
  readonly code = 'SESSION_LOST';
  constructor() {
    super('the database connection was replaced in the middle of a transaction');
  }
}

export function sameSession(a: Session | undefined, b: Session | undefined): boolean {
  return a !== undefined && b !== undefined && a.pid === b.pid && a.secret === b.secret;
}

type CopyStream = NodeJS.WritableStream & {
  on(ev: string, fn: (...a: unknown[]) => void): void;
  destroy(err?: Error): void;
  _writableState?: { autoDestroy: boolean };
};

export interface CopyIn {
  /** The session the statements were sent on, once they are (undefined until then). */
  readonly session: () => Session | undefined;
  /** Resolves with that session once the server has taken the rows. */
  readonly done: Promise<Session>;
}

/**
 * Runs `statements` (ending with a COPY ... FROM STDIN) as one simple query and streams `data` into
 * the COPY in one write.
 */
export function copyIn(sql: Sql, statements: string, data: Uint8Array): CopyIn {
  let sent: { state?: Session } | null = null;
  const done = new Promise<Session>((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const query = sql.unsafe(statements) as unknown as {
      state?: Session;
      reject: (err: unknown) => void;
      writable(): Promise<CopyStream>;
    };
    sent = query;
    const original = query.reject;
    query.reject = (err: unknown) => {
      original(err);
      fail(err);
    };
    query.writable().then((w) => {
      // At once: should the connection close now, postgres.js destroys the stream with an error,
      // and an 'error' event without a listener would take the whole process down.
      w.on('error', fail);
      if (w._writableState) w._writableState.autoDestroy = false;
      w.on('finish', () => {
        if (settled) return;
        settled = true;
        resolve(query.state!);
      });
      w.end(data);
    }, fail);
  });
  return { session: () => sent?.state, done };
}
