// COPY ... FROM STDIN through postgres.js, settled on both outcomes.
// postgres.js resolves the query with the writable as soon as COPY starts; a server error after
// CopyDone then reaches only the already-settled query and the writable never finishes
// (porsager/postgres#1173). We hook the query's reject to see that error. On success the writable
// would destroy itself and send a stray CopyFail (FIELD-NOTES.md): harmless only outside copy mode,
// and a syscall either way, so its auto-destroy is switched off.
import type { Sql } from '../db/connect.js';

/**
 * Sends the COPY statement at once (it may queue behind statements already sent on the
 * connection) and the data, in one write, once `data` resolves.
 */
export function copyIn(sql: Sql, statement: string, data: Promise<Uint8Array> | Uint8Array): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const query = sql.unsafe(statement) as unknown as {
      reject: (err: unknown) => void;
      writable(): Promise<NodeJS.WritableStream & { on(ev: string, fn: (...a: unknown[]) => void): void; _writableState?: { autoDestroy: boolean } }>;
    };
    const original = query.reject;
    query.reject = (err: unknown) => {
      original(err);
      fail(err);
    };
    Promise.all([query.writable(), data]).then(
      ([w, bytes]) => {
        if (w._writableState) w._writableState.autoDestroy = false;
        w.on('error', fail);
        w.on('finish', () => {
          if (settled) return;
          settled = true;
          resolve();
        });
        w.end(bytes);
      },
      fail,
    );
  });
}
