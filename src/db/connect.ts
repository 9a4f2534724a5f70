// postgres.js clients. A TCP socket gets TCP_NODELAY: without it each COPY waits ~40 ms on
// Nagle's algorithm (measured here: COPY of 1000-row batches fell from ~104k to ~19k rows/s).
// A URL with `?host=/socket/dir` uses that Unix socket,
// which costs the CPU less per write than loopback TCP.
import { connect as netConnect, type Socket } from 'node:net';
import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction of `Sql.begin`. */
export type Tx = postgres.TransactionSql<Record<string, never>>;

interface SocketOptions {
  host: string[];
  port: number[];
}

function noDelaySocket(opts: SocketOptions): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = netConnect({ host: opts.host[0], port: opts.port[0] ?? 5432, noDelay: true });
    sock.once('connect', () => {
      sock.off('error', reject);
      resolve(sock);
    });
    sock.once('error', reject);
  });
}

export interface ConnectOptions {
  max: number;
  /** Shown in pg_stat_activity. */
  name: string;
  connectTimeoutS?: number;
  /** Session settings (run-time parameters). */
  settings?: Record<string, string>;
}

export function connect(url: string, { max, name, connectTimeoutS = 5, settings = {} }: ConnectOptions): Sql {
  const u = new URL(url);
  const socketDir = u.searchParams.get('host');
  const unix = socketDir?.startsWith('/') === true;
  if (unix) u.searchParams.delete('host');
  return postgres(u.toString(), {
    max,
    connect_timeout: connectTimeoutS,
    idle_timeout: 0,
    max_lifetime: null,
    // Queries wait for a reconnect; postgres.js's default backoff grows to 20 s, which would hold
    // requests that long during an outage. Cap it at 1 s.
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    onnotice: () => undefined,
    // JIT compiles a plan whose estimated cost passes a threshold, and a plan that avoids sorts or scans by
    // `enable_* = off` always does (the setting adds a huge cost): Debian's PostgreSQL 15 spent 2 s compiling
    // the report fold of an empty window, against 1.7 ms to run it. Nothing the service asks runs long enough to pay
    // for a compile.
    connection: { application_name: name, jit: 'off', ...settings },
    ...(unix ? { path: `${socketDir}/.s.PGSQL.${u.port || 5432}` } : { socket: noDelaySocket as never }),
  }) as Sql;
}
