import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/base/errors.js';
import { BodyBudget } from '../../../src/limits/body-budget.js';
import { HttpServer } from '../../../src/http/server.js';

let server: HttpServer;
let base: string;
let port: number;
const errors: unknown[] = [];
/** What the server reported it answered (its metrics count these): "path status". */
const replied: string[] = [];
const budget = new BodyBudget(1 << 20);
let shedding = true;
/** One refusal for every request, as load shedding's: its reply is built once, and reused by every test below. */
const SHARED_REFUSAL = new HttpError('overloaded', { retryAfterS: 1 });

beforeAll(async () => {
  server = new HttpServer({
    maxBodyBytes: 1024,
    bodyBudget: budget,
    trustProxy: false,
    onError: (_req, err) => errors.push(err),
    onReply: (req, reply) => replied.push(`${req.path} ${reply.status}`),
  });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  let deep: unknown = 0;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  server
    .route('get', '/cyclic', () => ({ status: 200, body: cyclic }))
    .route('get', '/deep', () => ({ status: 200, body: deep }))
    .route('get', '/ok', () => ({ status: 200, body: { ok: true } }))
    .route('post', '/refuse', () => {
      throw new HttpError('overloaded', { retryAfterS: 1 });
    })
    .route('post', '/echo', async (_req, readBody) => ({
      status: 200,
      body: { bytes: (await readBody()).byteLength },
    }))
    .route('post', '/shed-shared', () => ({ status: 202 }), { shed: { refusal: () => SHARED_REFUSAL } })
    .route('post', '/shed', () => ({ status: 202, body: { ok: true } }), {
      shed: { refusal: () => (shedding ? SHARED_REFUSAL : null) },
    });
  port = await server.listen('127.0.0.1', 0);
  base = `http://127.0.0.1:${port}`;
});
afterAll(() => {
  server.stopListening();
});

/** A client on a raw socket: what it sent is exactly what the server reads. */
async function rawClient() {
  const socket = connect({ host: '127.0.0.1', port });
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  return {
    socket,
    closed,
    received: () => received,
    /** Resolves once `n` answers have begun to arrive. */
    answers: (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => ((received.match(/HTTP\/1\.1 /g) ?? []).length >= n ? resolve() : setTimeout(check, 5));
        check();
      }),
  };
}

describe('HttpServer', () => {
  it('answers a shared refusal the same each time, with each request its own request id', async () => {
    const answers = [];
    for (const id of ['first-request', 'second-request']) {
      const r = await fetch(`${base}/shed-shared`, { method: 'POST', headers: { 'x-request-id': id }, body: '{}' });
      answers.push({
        status: r.status,
        id: r.headers.get('x-request-id'),
        retry: r.headers.get('retry-after'),
        body: await r.json(),
      });
    }
    expect(answers.map((a) => a.id)).toEqual(['first-request', 'second-request']);
    expect(answers.map((a) => a.status)).toEqual([503, 503]);
    expect(answers.map((a) => a.retry)).toEqual(['1', '1']);
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[0]!.body).toMatchObject({ error: 'overloaded' });
  });

  it("a reply that cannot be serialised is that request's 500; the server goes on", async () => {
    for (const path of ['/cyclic', '/deep']) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(500);
      expect(await r.json()).toEqual({ error: 'internal', message: 'Internal error.' });
    }
    expect(errors.length).toBe(2);
    // Reported as answered: the 500 that went out, not the handler's 200.
    expect(replied.filter((r) => r.startsWith('/cyclic') || r.startsWith('/deep'))).toEqual([
      '/cyclic 500',
      '/deep 500',
    ]);
    expect((await fetch(`${base}/ok`)).status).toBe(200);
  });

  it('a request answered before its body arrives holds none of it; the connection serves the next request', async () => {
    const { socket, received, answers } = await rawClient();
    // The head alone: the answer comes first, then the body, in two parts.
    socket.write('POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
    await answers(1);
    expect(received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(received()).toMatch(/Retry-After: 1/i);
    socket.write('a'.repeat(600));
    await new Promise((r) => setTimeout(r, 50));
    socket.write('a'.repeat(400));
    socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
    await answers(2);
    expect(received()).toMatch(/HTTP\/1\.1 200 [\s\S]*\{"bytes":3\}$/);
    socket.destroy();
    expect(budget.bytes).toBe(0);
  });

  it('a chunked body answered before it ends has its connection closed rather than read without end', async () => {
    const { socket, received, closed } = await rawClient();
    socket.write('POST /refuse HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n');
    await closed;
    expect(received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(budget.bytes).toBe(0);
  });

  it('a shed route answers 503 from its head; the body that follows is dropped and the connection serves the next request', async () => {
    const { socket, received, answers } = await rawClient();
    socket.write('POST /shed HTTP/1.1\r\nHost: x\r\nX-Request-Id: shed-1\r\nContent-Length: 1000\r\n\r\n');
    await answers(1);
    expect(received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(received()).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(received()).toMatch(/\r\nX-Request-Id: shed-1\r\n/i);
    expect(received()).toContain('"error":"overloaded"');
    socket.write('a'.repeat(1000));
    shedding = false;
    socket.write('POST /shed HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    await answers(2);
    expect(received()).toMatch(/HTTP\/1\.1 202 [\s\S]*\{"ok":true\}$/);
    shedding = true;
    socket.destroy();
    expect(budget.bytes).toBe(0);
  });

  it.each([
    ['a chunked body', 'Transfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n'],
    ['a declared length past twice the limit', 'Content-Length: 4096\r\n\r\n'],
  ])('a shed route closes the connection under %s rather than read it to its end', async (_name, rest) => {
    const { socket, received, closed } = await rawClient();
    socket.write(`POST /shed HTTP/1.1\r\nHost: x\r\n${rest}`);
    await closed;
    expect(received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(budget.bytes).toBe(0);
  });

  it('a client that pipelines shed requests and never reads the answers costs only itself', async () => {
    shedding = true;
    const { socket } = await rawClient();
    socket.pause();
    socket.write('POST /shed HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'.repeat(20_000));
    await new Promise((r) => setTimeout(r, 500));
    expect((await fetch(`${base}/ok`)).status).toBe(200);
    socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect((await fetch(`${base}/ok`)).status).toBe(200);
  });
});
