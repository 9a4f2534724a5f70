// An open-loop load generator: request i leaves at start + i/rate whether or not earlier ones were
// answered, as independent clients do. autocannon is closed-loop (a connection sends its next
// request once the last is answered), so a slow server slows its own load and never sees a spike.
//
// HTTP/1.1 over raw sockets, one request in flight per connection (as browsers and bot backends
// send): a request due while every connection is busy opens another, up to `maxConnections`; past
// that it is counted `unsent`. Latency runs from the moment a request was due, so time spent
// waiting for a connection counts (no coordinated omission). As HTTP clients do, a connection idle
// for KEEP_ALIVE_MS is closed rather than reused: the server closes its idle ones after 10 s
// (uWebSockets.js), and a request written as that close crosses it is reset, unanswered.
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface OpenLoopOptions {
  url: string;
  headers: Record<string, string>;
  /** Requests per second offered. */
  rate: number;
  durationS: number;
  body: () => Buffer;
  maxConnections?: number;
  /** A request unanswered that long is abandoned (its connection closed) and counted a timeout. */
  timeoutMs?: number;
  /** Connections kept from an earlier run (a warm-up), as clients keep theirs alive; closed otherwise. */
  pool?: ConnectionPool;
}

/** Below uWebSockets.js's 10 s idle timeout, as undici's 4 s keep-alive is. */
const KEEP_ALIVE_MS = 4000;

/** Idle connections carried from one run to the next. */
export interface ConnectionPool {
  idle: Conn[];
  close(): void;
}

export function connectionPool(): ConnectionPool {
  const pool: ConnectionPool = {
    idle: [],
    close() {
      for (const c of pool.idle) c.socket.destroy();
      pool.idle = [];
    },
  };
  return pool;
}

export interface StatusFigures {
  count: number;
  p50: number;
  p99: number;
  max: number;
  /** Answers of this status without a Retry-After header. */
  withoutRetryAfter: number;
}

export interface OpenLoopResult {
  offered: number;
  seconds: number;
  byStatus: Record<string, StatusFigures>;
  /**
   * The same answers timed from when each request was written rather than due: what the service and the sockets
   * took, without the generator's own lateness (a fresh connection's handshake included).
   */
  byStatusFromWrite: Record<string, StatusFigures>;
  timeouts: number;
  /** Connections that failed or closed under a request. */
  errors: number;
  /**
   * Those errors by kind: the socket's error code, or `closed` (closed without one, no answer), and whether the
   * connection had carried an answer before (`reused`) or was new (`new`): "ECONNRESET reused" → 3.
   */
  errorKinds: Record<string, number>;
  /** Due while every allowed connection was busy. */
  unsent: number;
  peakConnections: number;
  /** This process's own event-loop delay (ms), which every latency above includes. */
  generatorDelayP99: number;
  generatorDelayMax: number;
}

export interface Conn {
  socket: Socket;
  /** When the request in flight was due; null when idle. */
  dueAt: number | null;
  /** When it was written. */
  writtenAt: number;
  buf: Buffer;
  /** Answers it has carried. */
  answers: number;
  /** When it last became idle. */
  idleSince: number;
}

class Latencies {
  private values = new Float64Array(1024);
  n = 0;
  noRetryAfter = 0;
  add(ms: number): void {
    if (this.n === this.values.length) {
      const bigger = new Float64Array(this.n * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.n++] = ms;
  }
  figures(): StatusFigures {
    const sorted = this.values.slice(0, this.n).sort();
    const at = (q: number) => (this.n === 0 ? 0 : sorted[Math.min(this.n - 1, Math.floor(q * this.n))]!);
    return { count: this.n, p50: at(0.5), p99: at(0.99), max: at(1), withoutRetryAfter: this.noRetryAfter };
  }
}

const HEAD_END = Buffer.from('\r\n\r\n');

export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const u = new URL(o.url);
  const host = u.hostname;
  const port = Number(u.port);
  const maxConnections = o.maxConnections ?? 4000;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const headLines = [`POST ${u.pathname} HTTP/1.1`, `Host: ${u.host}`];
  for (const [k, v] of Object.entries(o.headers)) headLines.push(`${k}: ${v}`);
  const head = headLines.join('\r\n');

  const idle: Conn[] = o.pool?.idle.splice(0) ?? [];
  const all = new Set<Conn>(idle);
  const byStatus = new Map<string, Latencies>();
  const byStatusFromWrite = new Map<string, Latencies>();
  let timeouts = 0;
  let errors = 0;
  const errorKinds = new Map<string, number>();
  let unsent = 0;
  let peakConnections = 0;
  let inFlight = 0;

  const record = (into: Map<string, Latencies>, status: string, ms: number, retryAfter: boolean) => {
    let l = into.get(status);
    if (l === undefined) into.set(status, (l = new Latencies()));
    l.add(ms);
    if (!retryAfter) l.noRetryAfter++;
  };

  const drop = (c: Conn, counted: 'error' | 'timeout' | null, kind = 'closed') => {
    if (!all.delete(c)) return;
    if (c.dueAt !== null) {
      inFlight--;
      if (counted === 'timeout') timeouts++;
      else if (counted === 'error') {
        errors++;
        const key = `${kind} ${c.answers > 0 ? 'reused' : 'new'}`;
        errorKinds.set(key, (errorKinds.get(key) ?? 0) + 1);
      }
      c.dueAt = null;
    }
    const i = idle.indexOf(c);
    if (i >= 0) idle.splice(i, 1);
    c.socket.destroy();
  };

  // One answer at a time per connection: read the head, then Content-Length bytes of body.
  const onData = (c: Conn, chunk: Buffer) => {
    c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk]);
    const end = c.buf.indexOf(HEAD_END);
    if (end < 0) return;
    const text = c.buf.subarray(0, end).toString('latin1');
    const m = /content-length:\s*(\d+)/i.exec(text);
    const length = m === null ? 0 : Number(m[1]);
    if (c.buf.length < end + 4 + length) return;
    const status = text.slice(9, 12);
    const closing = /\r\nconnection:\s*close/i.test(text);
    c.buf = c.buf.subarray(end + 4 + length);
    if (c.dueAt !== null) {
      const now = performance.now();
      const retryAfter = /\r\nretry-after:/i.test(text);
      record(byStatus, status, now - c.dueAt, retryAfter);
      record(byStatusFromWrite, status, now - c.writtenAt, retryAfter);
      c.dueAt = null;
      c.answers++;
      inFlight--;
    }
    if (closing) drop(c, null);
    else {
      c.idleSince = performance.now();
      idle.push(c);
    }
  };

  const listen = (c: Conn) => {
    c.socket.removeAllListeners('data').removeAllListeners('error').removeAllListeners('close');
    c.socket.on('data', (chunk: Buffer) => onData(c, chunk));
    c.socket.on('error', (err: NodeJS.ErrnoException) => drop(c, 'error', err.code ?? err.message));
    c.socket.on('close', () => drop(c, 'error'));
  };
  for (const c of idle) listen(c);
  const open = (): Conn => {
    const socket = connect({ host, port, noDelay: true });
    const c: Conn = { socket, dueAt: null, writtenAt: 0, buf: Buffer.alloc(0), answers: 0, idleSince: 0 };
    listen(c);
    all.add(c);
    peakConnections = Math.max(peakConnections, all.size);
    return c;
  };

  const send = (dueAt: number) => {
    let c = idle.pop();
    // The most recently idle comes first, so one kept too long means every one below it was too.
    if (c !== undefined && performance.now() - c.idleSince > KEEP_ALIVE_MS) {
      for (const stale of [...idle.splice(0), c]) drop(stale, null);
      c = undefined;
    }
    if (c === undefined) {
      if (all.size >= maxConnections) {
        unsent++;
        return;
      }
      c = open();
    }
    const body = o.body();
    c.dueAt = dueAt;
    c.writtenAt = performance.now();
    inFlight++;
    c.socket.write(Buffer.concat([Buffer.from(`${head}\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
  };

  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const started = performance.now();
  const interval = 1000 / o.rate;
  const total = Math.floor(o.rate * o.durationS);
  let sent = 0;
  const expire = () => {
    const now = performance.now();
    for (const c of [...all]) if (c.dueAt !== null && now - c.dueAt > timeoutMs) drop(c, 'timeout');
  };
  const sweeper = setInterval(expire, 100);
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      // Everything due by now leaves now, each stamped with the moment it was due.
      while (sent < total && started + sent * interval <= now) send(started + sent++ * interval);
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const seconds = (performance.now() - started) / 1000;
  // The schedule is over: wait for the answers still owed (each bounded by the timeout).
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  clearInterval(sweeper);
  lag.disable();
  if (o.pool === undefined) for (const c of [...all]) drop(c, null);
  else o.pool.idle.push(...all);
  return {
    offered: total,
    seconds,
    byStatus: Object.fromEntries([...byStatus].map(([s, l]) => [s, l.figures()])),
    byStatusFromWrite: Object.fromEntries([...byStatusFromWrite].map(([s, l]) => [s, l.figures()])),
    timeouts,
    errors,
    errorKinds: Object.fromEntries(errorKinds),
    unsent,
    peakConnections,
    generatorDelayP99: lag.percentile(99) / 1e6,
    generatorDelayMax: lag.max / 1e6,
  };
}
