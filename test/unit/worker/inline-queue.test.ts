import { createServer, connect, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolOverloaded } from '../../../src/worker/errors.js';
import { InlineQueue } from '../../../src/worker/inline-queue.js';

/** Busy for `ms`, as parsing a body is. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

let server: Server;
let port: number;
beforeAll(async () => {
  // Echoes each line back: a client's request arriving on a socket while the queue is long.
  server = createServer((s) => s.on('data', (d) => s.write(d)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('InlineQueue', () => {
  it('runs jobs in the order they came, each answering its own caller', async () => {
    const q = new InlineQueue(1000);
    const order: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        q.run(() => {
          order.push(i);
          return i * 2;
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(results).toEqual(Array.from({ length: 100 }, (_, i) => i * 2));
    expect(q.length).toBe(0);
    expect(q.waitMs).toBe(0);
  });

  it('lets a socket be read and answered between slices, long before a backlog of 300 ms is through', async () => {
    const q = new InlineQueue(1000);
    const socket = connect({ port, host: '127.0.0.1' });
    await new Promise((r) => socket.once('connect', r));
    let done = 0;
    const all = Promise.all(
      Array.from({ length: 300 }, () =>
        q.run(() => {
          busy(1);
          done++;
        }),
      ),
    );
    socket.write('ping');
    const answeredAfter = await new Promise<number>((r) => socket.once('data', () => r(done)));
    socket.destroy();
    await all;
    // Run as they arrived (no slices), all 300 would be done before the socket's answer was read.
    expect(answeredAfter).toBeLessThan(100);
    expect(done).toBe(300);
  });

  it("says how long its oldest job has waited, and a job's throw is its own caller's", async () => {
    let now = 1000;
    const q = new InlineQueue(1000, () => now);
    const first = q.run(() => {
      throw new RangeError('too deep');
    });
    now = 1040;
    const second = q.run(() => 'ok');
    expect(q.length).toBe(2);
    now = 1070;
    expect(q.waitMs).toBe(70);
    await expect(first).rejects.toThrow('too deep');
    await expect(second).resolves.toBe('ok');
    expect(q.waitMs).toBe(0);
  });

  it('serves known senders first, gives work before authentication a quarter of the time, bounds it and leaves it out of waitMs', async () => {
    let now = 0;
    const q = new InlineQueue(100, () => now);
    const order: string[] = [];
    // Each body before authentication costs 4 ms of parsing, each known sender's 1 ms.
    const unknown = Array.from({ length: 100 }, (_, i) =>
      q.run(() => {
        now += 4;
        order.push(`u${i}`);
      }, false),
    );
    await expect(q.run(() => undefined, false)).rejects.toBeInstanceOf(PoolOverloaded);
    // A flood before authentication is nobody's backlog: shedding does not see it.
    expect(q.length).toBe(0);
    expect(q.unknownLength).toBe(100);
    expect(q.waitMs).toBe(0);
    const known = Array.from({ length: 6 }, (_, i) =>
      q.run(() => {
        now += 1;
        order.push(`k${i}`);
      }),
    );
    expect(q.length).toBe(6);
    await Promise.all([...unknown, ...known]);
    // One costly body gets its turn; the next waits until the known senders' time makes it a quarter again.
    expect(order.slice(0, 8)).toEqual(['k0', 'u0', 'k1', 'k2', 'k3', 'k4', 'k5', 'u1']);
    expect(order).toHaveLength(106);
  });

  it('refuses unparsed a body before authentication that waited past 3 s', async () => {
    let now = 0;
    const q = new InlineQueue(100, () => now);
    let parsed = 0;
    const stale = q.run(() => parsed++, false);
    now = 3001;
    const fresh = q.run(() => parsed++, false);
    await expect(stale).rejects.toBeInstanceOf(PoolOverloaded);
    await expect(fresh).resolves.toBe(0);
    expect(parsed).toBe(1);
  });
});
