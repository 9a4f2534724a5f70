// Slow and broken clients: bounded time and memory, other clients unaffected.
import { readFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '1000000' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const memMiB = (field: 'VmRSS' | 'VmSize') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8'))![1]) / 1024;
const rssMiB = () => memMiB('VmRSS');

function raw(text: string): { socket: Socket; closed: Promise<number> } {
  const started = Date.now();
  const socket = netConnect(srv.port, '127.0.0.1');
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
  socket.write(text);
  return { socket, closed };
}

/** Sends `text` at once, then `slowly` one byte a second, as a slowloris client does, until the connection closes. */
function trickle(text: string, slowly: string): { socket: Socket; closed: Promise<number> } {
  const c = raw(text);
  let i = 0;
  const timer = setInterval(() => {
    if (i < slowly.length) c.socket.write(slowly[i++]!);
  }, 1000);
  void c.closed.then(() => clearInterval(timer));
  return c;
}

/** uWebSockets.js drops a connection idle for about this long (built in, not a setting). */
const IDLE_MS = 10_000;
/** The service answers a request that waits for the database within WRITE_TIMEOUT_MS (10 s by default). */
const WRITE_TIMEOUT_MS = 10_000;

/** Another client's request gets its 202 (stored), not a 503 or a hang. */
async function othersServed(): Promise<void> {
  const e = serverEvent();
  const started = Date.now();
  expect((await postBotApi(srv.url, p.token, { events: [e] })).status).toBe(202);
  // Not a latency check: only a hang fails it (3× WRITE_TIMEOUT_MS, past which the service would have answered 503).
  expect(Date.now() - started).toBeLessThan(3 * WRITE_TIMEOUT_MS);
  expect(await db.sql`SELECT 1 FROM events WHERE event_id = ${e.eventId}`).toHaveLength(1);
}

describe('slow and broken clients', () => {
  it(
    'closes a client that stalls or trickles in its headers or its body; the others are served meanwhile',
    async () => {
      const bodyHead = `POST /tg HTTP/1.1\r\nHost: x\r\nX-API-Key: ${p.token}\r\nContent-Type: application/json\r\nContent-Length: 33554432\r\n\r\n{"events":[`;
      const slow = {
        headers: raw('POST /tg HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n'),
        body: raw(bodyHead),
        // A byte a second: never idle, and far longer than the test if the server waited for the end.
        trickledHeaders: trickle('POST /tg HTTP/1.1\r\nHost: x\r\n', `X-Pad: ${'a'.repeat(200)}`),
        trickledBody: trickle(bodyHead, ' '.repeat(200)),
      };
      const clients = Object.values(slow);
      let open = clients.length;
      for (const s of clients) void s.closed.then(() => open--);
      // Others are served while the slow clients still hold their connections: the order, not a duration.
      let servedMeanwhile = 0;
      while (open === clients.length && servedMeanwhile < 5) {
        await othersServed();
        if (open === clients.length) servedMeanwhile++;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(servedMeanwhile).toBeGreaterThanOrEqual(1);
      // All are dropped by the server (we never close them); 4× the ~10 s idle timeout only catches "never".
      let timer: NodeJS.Timeout | undefined;
      const never = new Promise<'open'>((r) => {
        timer = setTimeout(() => r('open'), 4 * IDLE_MS);
      });
      for (const [name, s] of Object.entries(slow))
        expect([name, await Promise.race([s.closed.then(() => 'closed'), never])]).toEqual([name, 'closed']);
      clearTimeout(timer);
      await othersServed();
    },
    4 * IDLE_MS + 4 * WRITE_TIMEOUT_MS,
  );

  it('a client that announces a large body and sends a few bytes costs those bytes, not the announcement', async () => {
    // Address space, not RSS: memory reserved for an announced body is not touched, so RSS would not show it.
    const before = memMiB('VmSize');
    const sockets = Array.from({ length: 50 }, () =>
      raw(`POST /tg HTTP/1.1\r\nHost: x\r\nX-API-Key: ${p.token}\r\nContent-Length: 33554432\r\n\r\n{"ev`),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(memMiB('VmSize') - before).toBeLessThan(200);
    await othersServed();
    for (const s of sockets) s.socket.destroy();
  });

  it('a client that disconnects mid-body leaves nothing behind', async () => {
    const e = serverEvent();
    const full = JSON.stringify({ events: [e] });
    const { socket, closed } = raw(
      `POST /tg HTTP/1.1\r\nHost: x\r\nX-API-Key: ${p.token}\r\nContent-Type: application/json\r\nContent-Length: ${full.length}\r\n\r\n${full.slice(0, 40)}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
    await closed;
    await othersServed();
    expect(await db.sql`SELECT 1 FROM events WHERE event_id = ${e.eventId}`).toHaveLength(0);
  });

  it('a client that pipelines requests and never reads the answers is held to what its socket buffers', async () => {
    const before = rssMiB();
    const socket = netConnect(srv.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause();
    const request = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
    let sent = 0;
    await new Promise<void>((resolve) => {
      const pump = () => {
        while (sent < 100_000) {
          sent++;
          if (!socket.write(request)) return void socket.once('drain', pump);
        }
        resolve();
      };
      pump();
      setTimeout(resolve, 3000);
    });
    await othersServed();
    expect(rssMiB() - before).toBeLessThan(100);
    expect((await call(`${srv.url}/healthz`)).status).toBe(200);
    socket.destroy();
  });
});
