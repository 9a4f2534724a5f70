// postgres.js clients. Every socket gets TCP_NODELAY: without it each COPY waits ~40 ms on
// Nagle's algorithm (see FIELD-NOTES.md).
import { connect as netConnect, type Socket } from 'node:net';
import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;

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
}

export function connect(url: string, { max, name, connectTimeoutS = 5 }: ConnectOptions): Sql {
  const u = new URL(url);
  // A Unix-socket URL (host=/path) is passed through; only TCP needs the custom socket.
  const tcp = !u.searchParams.get('host')?.startsWith('/');
  return postgres(url, {
    max,
    connect_timeout: connectTimeoutS,
    idle_timeout: 0,
    max_lifetime: null,
    onnotice: () => undefined,
    connection: { application_name: name },
    ...(tcp ? { socket: noDelaySocket as never } : {}),
  }) as Sql;
}
