// COPY ... FROM STDIN through postgres.js, settled on both outcomes.
// postgres.js resolves the query with the writable as soon as COPY starts; a server error after
// CopyDone then reaches only the already-settled query and the writable never finishes
// (porsager/postgres#1173). We hook the query's reject to see that error, and we issue nothing
// else on the connection until the COPY has settled, so the writable's stray CopyFail (sent by
// its autoDestroy) always lands outside copy mode, where the server ignores it.
import type { Sql } from '../db/connect.js';

export function copyIn(sql: Sql, statement: string, chunks: readonly Uint8Array[]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const query = sql.unsafe(statement) as unknown as {
      reject: (err: unknown) => void;
      writable(): Promise<NodeJS.WritableStream & { on(ev: string, fn: (...a: unknown[]) => void): void; destroy(): void }>;
    };
    const original = query.reject;
    query.reject = (err: unknown) => {
      original(err);
      fail(err);
    };
    query.writable().then(
      (w) => {
        w.on('error', fail);
        w.on('finish', () => {
          if (settled) return;
          settled = true;
          resolve();
        });
        for (const c of chunks) if (c.byteLength > 0) w.write(c);
        w.end();
      },
      fail,
    );
  });
}
