// The group-commit writer's scheduling, against a fake database session and a fake clock: how
// requests gather into batches, what a failure of the database does, how one request's data is
// told from the database's state, and what a commit that never settles is answered.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GroupCommitWriter, type WriterConnection, type WriterTransport } from '../../../src/writer/group-commit.js';
import type { WriteOutcome, WriteRequest } from '../../../src/writer/sink.js';
import { ConnectionLost, PgError } from '../../../src/writer/wire.js';

beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'performance'],
  });
});
afterEach(() => {
  vi.useRealTimers();
});

const request = (botId: string, rows = 1): WriteRequest => ({
  target: {
    projectId: 'p',
    botId,
    connection: 'token:t',
    receivedAt: '2026-11-24T10:00:00.000Z',
    authoritativeProfiles: false,
  },
  batch: {
    rows: new Uint8Array(0),
    rowCount: rows,
    summary: new Uint8Array(0),
    sessions: new Uint8Array(0),
    actions: [],
    userIds: [],
    profiles: [],
    bot: null,
    recheck: [],
    quarantine: new Uint8Array(0),
    quarantineCount: 0,
  },
});

interface Commit {
  names: string[];
  settle: (err?: unknown) => void;
}

/** A transport whose commits wait until the test settles them; `cancel` rejects the running one. */
function fakeTransport() {
  const commits: Commit[] = [];
  let cancels = 0;
  let connects = 0;
  const conn = (): WriterConnection => ({
    usable: true,
    script: async () => [],
    cancel: async () => {
      cancels++;
      commits.at(-1)?.settle(new PgError('canceling statement due to user request', '57014', undefined, undefined));
    },
    close: () => undefined,
  });
  const transport: WriterTransport = {
    connect: async () => {
      connects++;
      return conn();
    },
    commit: (_c, requests) =>
      new Promise((resolve, reject) => {
        commits.push({
          names: requests.map((r) => r.target.botId),
          settle: (err) =>
            err === undefined
              ? resolve({
                  outcomes: requests.map((r) => ({
                    stored: r.batch.rowCount,
                    billed: r.batch.rowCount,
                    storedNotBilled: 0,
                    redelivered: 0,
                  })),
                  rows: requests.length,
                })
              : reject(err),
        });
      }),
  };
  return { transport, commits, cancels: () => cancels, connects: () => connects };
}

function writer(
  transport: WriterTransport,
  o: Partial<{ connections: number; batchMaxRows: number; batchMaxWaitMs: number; writeTimeoutMs: number }> = {},
) {
  return new GroupCommitWriter({
    url: 'postgres://unused',
    connections: o.connections ?? 1,
    batchMaxRows: o.batchMaxRows ?? 100,
    batchMaxWaitMs: o.batchMaxWaitMs ?? 5,
    writeTimeoutMs: o.writeTimeoutMs ?? 10_000,
    maxQueuedRows: 1000,
    instanceId: 'i',
    transport,
  });
}

/** Settles in order whatever the writer sends, until `until()` holds. */
async function run(f: ReturnType<typeof fakeTransport>, decide: (names: string[]) => unknown = () => undefined) {
  for (let i = 0; i < 50; i++) {
    await vi.advanceTimersByTimeAsync(1);
    const open = f.commits.find((c) => !(c as { done?: boolean }).done);
    if (open === undefined) continue;
    (open as { done?: boolean }).done = true;
    open.settle(decide(open.names) as never);
  }
}

const outcome = (p: Promise<WriteOutcome>) =>
  p.then(
    () => 'stored',
    (e: { kind: string }) => e.kind,
  );

describe('GroupCommitWriter', () => {
  it('sends the first request at once and gathers the next ones while it commits, up to BATCH_MAX_ROWS', async () => {
    const f = fakeTransport();
    const w = writer(f.transport, { batchMaxRows: 3 });
    const answers = ['a', 'b', 'c', 'd', 'e'].map((n) => outcome(w.submit(request(n))));
    await run(f);
    expect(await Promise.all(answers)).toEqual(['stored', 'stored', 'stored', 'stored', 'stored']);
    expect(f.commits.map((c) => c.names)).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    await w.close();
  });

  it("queue delay: a request's wait and what its commit spends beyond its own rows (up to 0.1 ms each)", async () => {
    const f = fakeTransport();
    const w = writer(f.transport, { batchMaxRows: 2000 });
    // A heavy request alone in its commit: up to 0.1 ms a row is service, not a backlog.
    const big = outcome(w.submit(request('big', 500)));
    await vi.advanceTimersByTimeAsync(40);
    expect(f.commits.map((c) => c.names)).toEqual([['big']]);
    expect(w.queueDelayMs).toBe(0);
    // Requests waiting for the connection: their wait counts.
    const small = outcome(w.submit(request('small', 1)));
    const heavy = outcome(w.submit(request('heavy', 499)));
    await vi.advanceTimersByTimeAsync(30);
    expect(w.queueDelayMs).toBe(30);
    // A commit that stalls: past 50 ms (500 rows), it counts as waiting too.
    await vi.advanceTimersByTimeAsync(30);
    expect(w.queueDelayMs).toBe(60);
    f.commits[0]!.settle();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.commits.map((c) => c.names)).toEqual([['big'], ['small', 'heavy']]);
    // The small request's commit is spent almost wholly on another request's 499 rows: it counts as waiting.
    await vi.advanceTimersByTimeAsync(20);
    expect(w.queueDelayMs).toBeCloseTo(60 + 20 - 0.1, 5);
    f.commits[1]!.settle();
    expect(await Promise.all([big, small, heavy])).toEqual(['stored', 'stored', 'stored']);
    expect(w.queueDelayMs).toBe(0);
    await w.close();
  });

  it("queue delay: a small request behind a heavy one in its batch waits on the heavy one's rows", async () => {
    const f = fakeTransport();
    const w = writer(f.transport, { batchMaxRows: 2000 });
    const first = outcome(w.submit(request('first', 1)));
    await vi.advanceTimersByTimeAsync(1);
    // The heavy request is the batch's oldest; the small one joins it 2 ms later.
    const heavy = outcome(w.submit(request('heavy', 500)));
    await vi.advanceTimersByTimeAsync(2);
    const small = outcome(w.submit(request('small', 1)));
    f.commits[0]!.settle();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.commits.map((c) => c.names)).toEqual([['first'], ['heavy', 'small']]);
    await vi.advanceTimersByTimeAsync(40);
    // The heavy request's 40 ms are its own rows' (under 50 ms for 500); the small one's are others' (but 0.1 ms).
    expect(w.queueDelayMs).toBeCloseTo(40 - 0.1, 5);
    f.commits[1]!.settle();
    expect(await Promise.all([first, heavy, small])).toEqual(['stored', 'stored', 'stored']);
    await w.close();
  });

  it('queue delay: two heavy requests gathered into one commit wait on nobody while it stays within their own rows', async () => {
    const f = fakeTransport();
    const w = writer(f.transport, { batchMaxRows: 2000 });
    const first = outcome(w.submit(request('first', 1)));
    await vi.advanceTimersByTimeAsync(1);
    const a = outcome(w.submit(request('a', 400)));
    const b = outcome(w.submit(request('b', 400)));
    f.commits[0]!.settle();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.commits.map((c) => c.names)).toEqual([['first'], ['a', 'b']]);
    // 36 ms for 800 rows, as long as each one's 400 rows alone could take on a busy machine: service, not a backlog
    // (a share in proportion to their rows would read each as waiting 18 ms on the other).
    await vi.advanceTimersByTimeAsync(36);
    expect(w.queueDelayMs).toBe(0);
    // Past 40 ms (400 rows each), the commit counts as a stall.
    await vi.advanceTimersByTimeAsync(14);
    expect(w.queueDelayMs).toBe(10);
    f.commits[1]!.settle();
    expect(await Promise.all([first, a, b])).toEqual(['stored', 'stored', 'stored']);
    await w.close();
  });

  it('halves a batch the database refuses for its data, down to the request; the others are stored', async () => {
    const f = fakeTransport();
    const w = writer(f.transport);
    const first = outcome(w.submit(request('first')));
    const answers = ['a', 'bad', 'c', 'd'].map((n) => outcome(w.submit(request(n))));
    await run(f, (names) =>
      names.includes('bad') ? new PgError('invalid input', '22P02', undefined, undefined) : undefined,
    );
    expect([await first, ...(await Promise.all(answers))]).toEqual(['stored', 'stored', 'refused', 'stored', 'stored']);
    expect(f.commits.map((c) => c.names)).toEqual([
      ['first'],
      ['a', 'bad', 'c', 'd'],
      ['a', 'bad'],
      ['a'],
      ['bad'],
      ['c', 'd'],
    ]);
    await w.close();
  });

  it('every request of a batch refused: the database, answered unavailable, and the writer backs off', async () => {
    const f = fakeTransport();
    const w = writer(f.transport);
    const first = outcome(w.submit(request('first')));
    const answers = ['a', 'b'].map((n) => outcome(w.submit(request(n))));
    await run(f, (names) =>
      names[0] === 'first'
        ? undefined
        : new PgError('no partition of relation "events" found for row', '23514', undefined, undefined),
    );
    expect([await first, ...(await Promise.all(answers))]).toEqual(['stored', 'unavailable', 'unavailable']);
    // Refused at once while backing off (nothing is sent), accepted again after DOWN_MS.
    expect(await outcome(w.submit(request('soon')))).toBe('unavailable');
    await vi.advanceTimersByTimeAsync(500);
    const later = outcome(w.submit(request('later')));
    await run(f);
    expect(await later).toBe('stored');
    await w.close();
  });

  it('a lost connection is the database: the batch is answered unavailable, the session replaced', async () => {
    const f = fakeTransport();
    const w = writer(f.transport);
    const lost = outcome(w.submit(request('a')));
    await run(f, () => new ConnectionLost('gone'));
    expect(await lost).toBe('unavailable');
    await vi.advanceTimersByTimeAsync(500);
    const again = outcome(w.submit(request('b')));
    await run(f);
    expect(await again).toBe('stored');
    expect(f.connects()).toBe(2);
    await w.close();
  });

  it('a commit past WRITE_TIMEOUT_MS is cancelled and answered by its fate: not committed, unavailable', async () => {
    const f = fakeTransport();
    const w = writer(f.transport, { writeTimeoutMs: 1000 });
    const stuck = outcome(w.submit(request('a')));
    await vi.advanceTimersByTimeAsync(1000);
    expect(await stuck).toBe('unavailable');
    expect(f.cancels()).toBe(1);
    await w.close().catch(() => undefined);
  });
});
