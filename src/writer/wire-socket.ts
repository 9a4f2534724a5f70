// Where the writer's connections go and how they are opened: the URL read, a TCP (no Nagle) or Unix socket within a
// time limit, and TLS when the URL asks for it.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ConnectionLost } from './wire-errors.js';

export interface Target {
  path?: string;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  ssl: 'disable' | 'prefer' | 'require' | 'verify-full';
}

export function parseUrl(url: string): Target {
  const u = new URL(url);
  const socketDir = u.searchParams.get('host');
  const port = Number(u.port || 5432);
  const mode = u.searchParams.get('sslmode') ?? u.searchParams.get('ssl');
  const ssl =
    mode === 'require' || mode === 'true'
      ? 'require'
      : mode === 'verify-full' || mode === 'verify-ca'
        ? 'verify-full'
        : mode === 'prefer'
          ? 'prefer'
          : 'disable';
  return {
    ...(socketDir?.startsWith('/') ? { path: `${socketDir}/.s.PGSQL.${port}` } : {}),
    host: decodeURIComponent(u.hostname) || '127.0.0.1',
    port,
    user: decodeURIComponent(u.username) || 'postgres',
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres',
    ssl,
  };
}

export function openSocket(t: Target, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock =
      t.path !== undefined ? netConnect({ path: t.path }) : netConnect({ host: t.host, port: t.port, noDelay: true });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new ConnectionLost(`connecting to ${t.path ?? `${t.host}:${t.port}`} timed out`));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.off('error', onError);
      resolve(sock);
    });
    const onError = (err: Error) => {
      clearTimeout(timer);
      reject(new ConnectionLost(err.message));
    };
    sock.once('error', onError);
  });
}

/** Asks for TLS (SSLRequest) and upgrades the socket when the server agrees. */
export function negotiateTls(sock: Socket, t: Target): Promise<Socket> {
  if (t.ssl === 'disable' || t.path !== undefined) return Promise.resolve(sock);
  return new Promise((resolve, reject) => {
    const req = Buffer.alloc(8);
    req.writeInt32BE(8, 0);
    req.writeInt32BE(80877103, 4);
    sock.once('data', (b) => {
      if (b[0] === 0x53) {
        const tls = tlsConnect({ socket: sock, servername: t.host, rejectUnauthorized: t.ssl === 'verify-full' });
        tls.once('secureConnect', () => resolve(tls as unknown as Socket));
        tls.once('error', (err) => reject(new ConnectionLost(err.message)));
      } else if (t.ssl === 'require' || t.ssl === 'verify-full') reject(new ConnectionLost('the server refused TLS'));
      else resolve(sock);
    });
    sock.write(req);
  });
}
