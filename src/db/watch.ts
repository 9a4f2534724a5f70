// Losing and regaining the database, said once each in the log (error, then info), whatever the
// cause: an outage of a DATABASE_URL server or a restart of the embedded one.
import type { Logger } from '../base/log.js';
import type { Sql } from './connect.js';

export function watchDatabase(sql: Sql, log: Logger, everyMs = 1000): () => void {
  let up = true;
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    // A query waits for postgres.js to reconnect: no answer within the period is an outage too.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${everyMs} ms`)), everyMs);
    });
    Promise.race([sql`SELECT 1`, late])
      .then(
        () => {
          if (!up) log.info('database reachable again');
          up = true;
        },
        (err: unknown) => {
          if (up)
            log.error(
              { err: (err as Error).message },
              'database unreachable; requests that need it get 503 until it is back',
            );
          up = false;
        },
      )
      .finally(() => {
        clearTimeout(timer);
        checking = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
