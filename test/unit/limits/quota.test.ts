import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Sql } from '../../../src/db/connect.js';
import { type Grant, type LeaseStore, Quota, QuotaRefusal, type Reservation } from '../../../src/limits/quota.js';

const P = '11111111-1111-1111-1111-111111111111';
const JAN = Date.UTC(2026, 0, 15, 12);
const TTL = 2000;
const LEASE = 5000;
/** Long enough that no real timer of Quota.reserve fires during a test: waits end by settle() or the injected clock. */
const WAIT = 600_000;
const NONE = { projectId: '', events: 0 };

/** What PostgreSQL holds: the plan and this month's billed events, as readUsage and the lease store see them. */
interface Db {
  allowance: number | null;
  billed: number;
  /** The database's "YYYY-MM"; by default the month of the injected wall clock. */
  month?: string;
  /** No such project: readUsage finds no row. */
  missing?: boolean;
  /** The database cannot be asked. */
  down?: boolean;
  /** When set, each plan read waits for this gate before answering. */
  gate?: Promise<void>;
}

/**
 * A stand-in for postgres.js: a tagged-template function that resolves to the rows readUsage expects
 * (numeric columns as strings, as postgres.js returns bigint and numeric).
 */
function fakeSql(db: Db, wallNow: () => number) {
  const calls: unknown[][] = [];
  const sql = (async (_strings: TemplateStringsArray, ...values: unknown[]) => {
    calls.push(values);
    if (db.gate !== undefined) await db.gate;
    if (db.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    if (db.missing) return [];
    return [
      {
        event_allowance: db.allowance === null ? null : String(db.allowance),
        billed: String(db.billed),
        stored: String(db.billed),
        month: db.month ?? new Date(wallNow()).toISOString().slice(0, 7),
      },
    ];
  }) as unknown as Sql;
  return { sql, calls };
}

interface RenewCall {
  projectId: string;
  inflight: number;
  want: number;
}

/**
 * A lease store the test controls. By default it answers from `db` (allowance and billed) and grants
 * up to `block` events; `answer` replaces that, `gate` holds every renewal until opened.
 */
class FakeStore implements LeaseStore {
  readonly calls: RenewCall[] = [];
  block = 10;
  gate: Promise<void> | undefined;
  answer: ((c: RenewCall) => Grant) | undefined;

  constructor(private readonly db: Db) {}

  async renew(projectId: string, inflight: number, want: number): Promise<Grant> {
    const c = { projectId, inflight, want };
    this.calls.push(c);
    if (this.gate !== undefined) await this.gate;
    else await Promise.resolve();
    if (this.answer !== undefined) return this.answer(c);
    if (this.db.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    return { allowance: this.db.allowance, billed: this.db.billed, granted: Math.min(want, this.block) };
  }
}

interface SetupOptions {
  ttlMs?: number;
  leaseMs?: number;
  waitLimitMs?: number;
  minBlock?: number | null;
  start?: number;
  block?: number;
}

function setup(db: Db, o: SetupOptions = {}) {
  // Two clocks, as in the service: a monotonic one for the TTL, leases and waits, and the wall clock for the month.
  let t = 1_000;
  let wall = o.start ?? JAN;
  const now = () => t;
  const wallNow = () => wall;
  const { sql, calls } = fakeSql(db, wallNow);
  const store = new FakeStore(db);
  if (o.block !== undefined) store.block = o.block;
  const quota = new Quota(sql, store, {
    ttlMs: o.ttlMs ?? TTL,
    leaseMs: o.leaseMs ?? LEASE,
    waitLimitMs: o.waitLimitMs ?? WAIT,
    ...(o.minBlock === null ? {} : { minBlock: o.minBlock ?? 10 }),
    now,
    wallNow,
  });
  return {
    quota,
    calls,
    store,
    db,
    /** Both clocks move on. */
    advance: (ms: number) => {
      t += ms;
      wall += ms;
    },
    /** Only the wall clock moves (the month changes, or the system clock is set). */
    setWall: (ms: number) => {
      wall = ms;
    },
  };
}

/** Lets pending promise callbacks (and a background refresh) run. */
const turn = () => new Promise<void>((r) => setImmediate(r));

/** 'pending', or what the promise settled with, after the pending callbacks have run. */
async function state<T>(p: Promise<T>): Promise<'pending' | { value: T } | { error: unknown }> {
  let s: 'pending' | { value: T } | { error: unknown } = 'pending';
  p.then(
    (value) => {
      s = { value };
    },
    (error: unknown) => {
      s = { error };
    },
  );
  await turn();
  await turn();
  return s;
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(QuotaRefusal);
    expect((err as Error).message).toBe(`quota: ${(err as QuotaRefusal).reason}`);
    return (err as QuotaRefusal).reason;
  }
  throw new Error('not refused');
}

function reasonOf(s: 'pending' | { value: unknown } | { error: unknown }): string {
  expect(s).toMatchObject({ error: expect.any(QuotaRefusal) });
  return (s as { error: QuotaRefusal }).error.reason;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Quota.check: the cached plan', () => {
  it('passes under the allowance and refuses with "exhausted" once it is used up, without asking the lease store', async () => {
    const q = setup({ allowance: 10, billed: 9 });
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(q.calls).toEqual([[P]]);
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    // Answered from the cache: one read in all; the store was asked by reserve only.
    expect(q.calls).toHaveLength(1);
    expect(q.store.calls).toHaveLength(1);
    expect(q.quota.stats).toEqual({ hits: 2, misses: 1, renewals: 1 });
  });

  it('refuses a project already used up on its first request, and check alone never touches the store', async () => {
    const q = setup({ allowance: 10, billed: 10 });
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(await refusal(q.quota.reserve(P, 1))).toBe('exhausted');
    expect(q.store.calls).toHaveLength(0);
    expect(q.calls).toHaveLength(1);
  });

  it('refuses with "unreadable" when the plan cannot be read, and reads again on the next request', async () => {
    const q = setup({ allowance: 10, billed: 10, down: true });
    expect(await refusal(q.quota.check(P))).toBe('unreadable');
    expect(await refusal(q.quota.reserve(P, 1))).toBe('unreadable');
    expect(q.calls).toHaveLength(2);
    expect(q.store.calls).toHaveLength(0);
    q.db.down = false;
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(q.calls).toHaveLength(3);
  });

  it('shares one read between concurrent first requests', async () => {
    let open!: () => void;
    const q = setup({
      allowance: 10,
      billed: 0,
      gate: new Promise<void>((r) => {
        open = r;
      }),
    });
    const all = Promise.all([q.quota.check(P), q.quota.check(P), q.quota.reserve(P, 2)]);
    await turn();
    open();
    const [, , r] = await all;
    expect(r).toEqual({ projectId: P, events: 2 });
    expect(q.calls).toHaveLength(1);
  });

  it('is trusted for the TTL, then answered stale while one background read refreshes it', async () => {
    const q = setup({ allowance: 10, billed: 5 });
    await q.quota.check(P);
    q.db.billed = 10; // another instance billed the rest
    q.advance(TTL - 1);
    await q.quota.check(P);
    expect(q.calls).toHaveLength(1);
    q.advance(1);
    // Stale: still answered from the cache, while a read starts in the background.
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(q.calls).toHaveLength(2);
    await turn();
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(q.calls).toHaveLength(2);
  });

  it('a refresh keeps our own commits that the snapshot does not show yet', async () => {
    const q = setup({ allowance: 10, billed: 5 });
    q.quota.settle(await q.quota.reserve(P, 5), 5); // 10 billed here; the database still says 5
    q.advance(TTL);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    await turn();
    expect(q.calls).toHaveLength(2);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
  });

  it('a refresh that fails leaves the cached plan in use', async () => {
    const q = setup({ allowance: 10, billed: 5 });
    await q.quota.check(P);
    q.db.down = true;
    q.advance(TTL);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    await turn();
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(q.calls).toHaveLength(3);
  });

  it('rolls over at the start of the month (UTC, by the wall clock): the new month starts from what the database says', async () => {
    const q = setup({ allowance: 10, billed: 10 }, { start: Date.UTC(2026, 0, 31, 23, 59, 59, 999) });
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    // January is used up; February has nothing billed yet.
    q.db.billed = 0;
    q.setWall(Date.UTC(2026, 1, 1));
    // Within the TTL (the monotonic clock did not move), yet read again at once: the cached plan is last month's.
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(q.calls).toHaveLength(2);
    expect(q.quota.stats.misses).toBe(2);
    await q.quota.check(P);
    expect(q.calls).toHaveLength(2);
  });
});

describe('Quota: projects without a limit', () => {
  it('never touches the lease store for an unlimited or unknown project', async () => {
    for (const db of [
      { allowance: null, billed: 1_000_000 },
      { allowance: 5, billed: 0, missing: true },
    ]) {
      const q = setup(db);
      await q.quota.check(P);
      for (let i = 0; i < 5; i++) {
        const r = await q.quota.reserve(P, 1000);
        expect(r).toEqual(NONE);
        q.quota.settle(r, 1000);
      }
      q.advance(10 * LEASE);
      expect(await q.quota.reserve(P, 1000)).toEqual(NONE);
      await expect(q.quota.check(P)).resolves.toBeUndefined();
      expect(q.store.calls).toHaveLength(0);
      expect(q.quota.stats.renewals).toBe(0);
    }
  });

  it('a limited project made unlimited (as the store reports) admits without bound', async () => {
    const q = setup({ allowance: 10, billed: 0 });
    q.store.answer = () => ({ allowance: null, billed: 0, granted: Number.MAX_SAFE_INTEGER });
    for (let i = 0; i < 20; i++) q.quota.settle(await q.quota.reserve(P, 100), 100);
    expect(q.store.calls).toHaveLength(1);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
  });
});

describe('Quota.reserve: the lease', () => {
  it('renews once, then admits while the room lasts; the batch that crosses it is admitted whole', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 10 });
    const rs: Reservation[] = [];
    for (let i = 0; i < 3; i++) rs.push(await q.quota.reserve(P, 4));
    expect(rs).toEqual([
      { projectId: P, events: 4 },
      { projectId: P, events: 4 },
      { projectId: P, events: 4 },
    ]);
    // One renewal for all three: 4 + 4 < 10 admits the third, which crosses the room.
    expect(q.store.calls).toEqual([{ projectId: P, inflight: 0, want: 10 }]);
    expect(q.quota.stats.renewals).toBe(1);
    // The room is used up (12 ≥ 10): the next reserve renews, reporting what is in flight here.
    expect(await q.quota.reserve(P, 1)).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(2);
    expect(q.store.calls[1]).toMatchObject({ projectId: P, inflight: 12 });
  });

  it('asks for at least the batch and at least minBlock (1000 by default)', async () => {
    const q = setup({ allowance: 1_000_000, billed: 0 }, { minBlock: null, block: 5000 });
    await q.quota.reserve(P, 3);
    expect(q.store.calls[0]!.want).toBe(1000);
    const big = setup({ allowance: 1_000_000, billed: 0 }, { minBlock: 10 });
    await big.quota.reserve(P, 700);
    expect(big.store.calls[0]!.want).toBe(700);
  });

  it('a busy instance asks for a larger block: twice its recent rate over a lease', async () => {
    const q = setup({ allowance: 1_000_000, billed: 0 }, { minBlock: 100, block: 100_000 });
    // 100 events over 1 s fill the first lease; at that rate a lease of 5 s is 500 events, twice that 1000.
    for (let i = 0; i < 10; i++) {
      q.quota.settle(await q.quota.reserve(P, 10), 10);
      q.advance(100);
    }
    expect(q.store.calls).toHaveLength(1);
    await q.quota.reserve(P, 10);
    expect(q.store.calls).toHaveLength(2);
    expect(q.store.calls[1]!.want).toBe(1000);
  });

  it('renews when the lease expires after leaseMs (monotonic clock), even with room left', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 100 });
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    // The wall clock jumps (within the month): no effect on the lease.
    q.setWall(JAN + 3 * 86_400_000);
    q.advance(LEASE - 1);
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    expect(q.store.calls).toHaveLength(1);
    q.advance(1);
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    expect(q.store.calls).toHaveLength(2);
    expect(q.store.calls[1]).toMatchObject({ inflight: 0 });
  });

  it('renews at the start of a new month (wall clock) with room left, and re-reads the plan', async () => {
    const q = setup({ allowance: 10, billed: 0 }, { start: Date.UTC(2026, 0, 31, 23, 59), block: 10 });
    const jan = await q.quota.reserve(P, 2);
    expect(q.store.calls).toHaveLength(1);
    q.setWall(Date.UTC(2026, 1, 1, 0, 0, 1));
    const feb = await q.quota.reserve(P, 2);
    expect(feb).toEqual({ projectId: P, events: 2 });
    expect(q.store.calls).toHaveLength(2);
    // January's reservation is still in flight and counted as this instance's.
    expect(q.store.calls[1]).toMatchObject({ inflight: 2 });
    expect(q.calls).toHaveLength(2);
    q.quota.settle(jan, 2);
    q.quota.settle(feb, 2);
  });

  it('concurrent reserves share one renewal', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 100, minBlock: 100 });
    await q.quota.check(P);
    let open!: () => void;
    q.store.gate = new Promise<void>((r) => {
      open = r;
    });
    const all = Promise.all(Array.from({ length: 8 }, () => q.quota.reserve(P, 5)));
    expect(await state(all)).toBe('pending');
    expect(q.store.calls).toHaveLength(1);
    open();
    expect(await all).toEqual(Array.from({ length: 8 }, () => ({ projectId: P, events: 5 })));
    expect(q.store.calls).toHaveLength(1);
    expect(q.quota.stats.renewals).toBe(1);
  });

  it('a reserve arriving while the lease is being renewed waits for that renewal, not the old room', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 10 });
    const first = await q.quota.reserve(P, 10);
    let open!: () => void;
    q.store.gate = new Promise<void>((r) => {
      open = r;
    });
    const a = q.quota.reserve(P, 1); // starts the renewal
    expect(await state(a)).toBe('pending');
    // Room given back to the old lease during the renewal must not admit around it.
    q.quota.release(first);
    const b = q.quota.reserve(P, 1);
    expect(await state(b)).toBe('pending');
    expect(q.store.calls).toHaveLength(2);
    open();
    expect(await a).toEqual({ projectId: P, events: 1 });
    expect(await b).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(2);
  });

  it('concurrent reserves beyond the renewed room: those left out wait for in-flight events, then renew', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 5 });
    const ps = Array.from({ length: 3 }, () => q.quota.reserve(P, 4));
    const states = await Promise.all(ps.map((p) => state(p)));
    // 0 < 5 and 4 < 5 admit two; the third finds the room used and events of this instance in flight.
    expect(states.slice(0, 2)).toEqual([
      { value: { projectId: P, events: 4 } },
      { value: { projectId: P, events: 4 } },
    ]);
    expect(states[2]).toBe('pending');
    expect(q.store.calls).toHaveLength(1);
    q.quota.settle(await ps[0]!, 4);
    expect(await state(ps[2]!)).toEqual({ value: { projectId: P, events: 4 } });
    expect(q.store.calls).toHaveLength(2);
    expect(q.store.calls[1]).toMatchObject({ inflight: 4 });
  });
});

describe('Quota.reserve: a renewal that grants nothing', () => {
  it('answers "exhausted" when the store says billed ≥ allowance, and check() refuses from then on', async () => {
    const q = setup({ allowance: 10, billed: 5 });
    await q.quota.check(P);
    // Other instances billed the rest; the cached plan does not know yet.
    q.db.billed = 10;
    q.store.block = 0;
    expect(await refusal(q.quota.reserve(P, 1))).toBe('exhausted');
    expect(q.store.calls).toHaveLength(1);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(q.calls).toHaveLength(1);
  });

  it('answers "exhausted" from a store reporting a lowered allowance', async () => {
    const q = setup({ allowance: 100, billed: 5 });
    await q.quota.check(P);
    q.store.answer = () => ({ allowance: 5, billed: 5, granted: 0 });
    expect(await refusal(q.quota.reserve(P, 1))).toBe('exhausted');
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
  });

  it('answers "settling" at once when the rest is held elsewhere and nothing of this instance is in flight', async () => {
    const q = setup({ allowance: 10, billed: 5 });
    q.store.block = 0;
    expect(await refusal(q.quota.reserve(P, 1))).toBe('settling');
    expect(q.store.calls).toHaveLength(1);
    // Not final: once the other instance's lease lets go, the next request is admitted.
    q.store.block = 10;
    expect(await q.quota.reserve(P, 1)).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(2);
  });

  it("waits for this instance's in-flight events and renews when they settle", async () => {
    const q = setup({ allowance: 10, billed: 0 }, { block: 10 });
    const a = await q.quota.reserve(P, 6);
    const b = await q.quota.reserve(P, 6);
    q.store.block = 0;
    const waiting = q.quota.reserve(P, 1);
    expect(await state(waiting)).toBe('pending');
    expect(q.store.calls).toEqual([
      { projectId: P, inflight: 0, want: 10 },
      { projectId: P, inflight: 12, want: expect.any(Number) },
    ]);
    // b is billed; the store still has nothing to give (a is in flight): it waits on.
    q.db.billed = 6;
    q.quota.settle(b, 6);
    expect(await state(waiting)).toBe('pending');
    expect(q.store.calls).toHaveLength(3);
    expect(q.store.calls[2]).toMatchObject({ inflight: 6 });
    // a turns out to be redeliveries: room comes free.
    q.store.block = 10;
    q.quota.release(a);
    expect(await state(waiting)).toEqual({ value: { projectId: P, events: 1 } });
    expect(q.store.calls).toHaveLength(4);
    expect(q.store.calls[3]).toMatchObject({ inflight: 0 });
  });

  it('a waiter is refused with "exhausted" when the in-flight batch used the allowance up', async () => {
    const q = setup({ allowance: 10, billed: 5 }, { block: 5 });
    const inflight = await q.quota.reserve(P, 5);
    q.store.block = 0;
    const waiting = q.quota.reserve(P, 1);
    expect(await state(waiting)).toBe('pending');
    q.db.billed = 10;
    q.quota.settle(inflight, 5);
    expect(reasonOf(await state(waiting))).toBe('exhausted');
  });

  it('answers "settling" when the in-flight events have not freed room by waitLimitMs', async () => {
    const q = setup({ allowance: 10, billed: 0 }, { waitLimitMs: 500, block: 10 });
    // The real timer of the wait is out of the way: the deadline is told by the injected clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const big = await q.quota.reserve(P, 6);
    const mid = await q.quota.reserve(P, 2);
    const small = await q.quota.reserve(P, 2);
    q.store.block = 0;
    const waiting = q.quota.reserve(P, 1);
    expect(await state(waiting)).toBe('pending');
    // Before the limit, a settle that frees no room keeps it waiting.
    q.db.billed = 6;
    q.quota.settle(big, 6);
    expect(await state(waiting)).toBe('pending');
    q.advance(501);
    // Woken past its deadline, with events still in flight and the store granting nothing.
    q.db.billed = 8;
    q.quota.settle(mid, 2);
    expect(reasonOf(await state(waiting))).toBe('settling');
    q.quota.settle(small, 1);
  });

  it('answers "settling" when waitLimitMs passes without a settle (the wait\'s own timer)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const q = setup({ allowance: 10, billed: 0 }, { waitLimitMs: 500, block: 10 });
    const held = await q.quota.reserve(P, 10);
    q.store.block = 0;
    const waiting = q.quota.reserve(P, 1);
    expect(await state(waiting)).toBe('pending');
    q.advance(499);
    await vi.advanceTimersByTimeAsync(499);
    expect(await state(waiting)).toBe('pending');
    q.advance(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(reasonOf(await state(waiting))).toBe('settling');
    q.quota.release(held);
  });

  it('answers "settling" at once with waitLimitMs 0', async () => {
    const q = setup({ allowance: 10, billed: 0 }, { waitLimitMs: 0, block: 10 });
    const held = await q.quota.reserve(P, 10);
    q.store.block = 0;
    expect(await refusal(q.quota.reserve(P, 1))).toBe('settling');
    q.quota.release(held);
  });
});

describe('Quota.settle and release', () => {
  it('frees in-flight events (the next renewal reports only those still in flight)', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 20, minBlock: 20 });
    const a = await q.quota.reserve(P, 10);
    const b = await q.quota.reserve(P, 7);
    q.quota.settle(a, 10);
    q.advance(LEASE);
    await q.quota.reserve(P, 1);
    expect(q.store.calls[1]).toMatchObject({ inflight: 7 });
    q.quota.release(b);
    q.advance(LEASE);
    await q.quota.reserve(P, 1);
    expect(q.store.calls[2]).toMatchObject({ inflight: 1 });
  });

  it('gives the room of unbilled events back to the lease, and none of billed ones', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 10 });
    const a = await q.quota.reserve(P, 6);
    const b = await q.quota.reserve(P, 4); // the room is used: 10 of 10
    // All of b billed: nothing comes back.
    q.quota.settle(b, 4);
    // 4 of a's 6 were redeliveries or free reports: 4 come back (used 6 of 10).
    q.quota.settle(a, 2);
    expect(await q.quota.reserve(P, 3)).toEqual({ projectId: P, events: 3 });
    expect(await q.quota.reserve(P, 1)).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(1);
    // 10 of 10 again: the next one needs a renewal.
    await q.quota.reserve(P, 1);
    expect(q.store.calls).toHaveLength(2);
  });

  it('release: nothing billed, all its room back, no longer in flight', async () => {
    const q = setup({ allowance: 10, billed: 9 }, { block: 1 });
    const r = await q.quota.reserve(P, 5);
    q.quota.release(r);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(await q.quota.reserve(P, 1)).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(1);
  });

  it('counts billed events into the cached plan: check() refuses once this instance billed the rest', async () => {
    const q = setup({ allowance: 10, billed: 0 }, { block: 10 });
    q.quota.settle(await q.quota.reserve(P, 6), 6);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    q.quota.settle(await q.quota.reserve(P, 4), 4);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(q.calls).toHaveLength(1);
  });

  it('settling a project it never read, or an unlimited reservation, is a no-op', async () => {
    const q = setup({ allowance: 10, billed: 0 });
    q.quota.settle({ projectId: 'other', events: 3 }, 3);
    q.quota.release({ projectId: 'other', events: 3 });
    q.quota.settle(NONE, 5);
    expect(q.calls).toHaveLength(0);
    expect(q.store.calls).toHaveLength(0);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
  });
});

describe('Quota.forget', () => {
  it('drops the lease and re-reads the plan, awaited, on the next request', async () => {
    const q = setup({ allowance: 10, billed: 10 }, { block: 100 });
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    q.db.allowance = 1000;
    q.quota.forget(P);
    await expect(q.quota.check(P)).resolves.toBeUndefined();
    expect(q.calls).toHaveLength(2);
    // The lease had room to spare; after forget it is not used again.
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    expect(q.store.calls).toHaveLength(1);
    q.quota.forget(P);
    q.quota.settle(await q.quota.reserve(P, 1), 1);
    expect(q.store.calls).toHaveLength(2);
    expect(q.calls).toHaveLength(3);
    q.quota.forget('never-read');
    expect(q.calls).toHaveLength(3);
  });

  it('a lowered allowance applies at once on this instance, lease or not', async () => {
    const q = setup({ allowance: 1000, billed: 0 }, { block: 100 });
    q.quota.settle(await q.quota.reserve(P, 10), 10);
    q.db.allowance = 10;
    q.db.billed = 10;
    q.quota.forget(P);
    expect(await refusal(q.quota.check(P))).toBe('exhausted');
    expect(await refusal(q.quota.reserve(P, 1))).toBe('exhausted');
  });

  it('a waiter renews against the raised allowance once in-flight events settle', async () => {
    const q = setup({ allowance: 10, billed: 9 }, { block: 1 });
    const held = await q.quota.reserve(P, 1);
    q.store.block = 0;
    const waiting = q.quota.reserve(P, 1);
    expect(await state(waiting)).toBe('pending');
    q.db.allowance = 20;
    q.quota.forget(P);
    q.store.block = 10;
    await q.quota.check(P);
    q.quota.release(held);
    expect(await state(waiting)).toEqual({ value: { projectId: P, events: 1 } });
  });
});

describe('Quota: a lease store that fails', () => {
  it('gives "unreadable" to every reserve sharing a renewal that throws, though the plan is cached, and asks again next time', async () => {
    const q = setup({ allowance: 10, billed: 0 }, { block: 10 });
    await q.quota.check(P);
    let fail = true;
    q.store.answer = (c) => {
      if (fail) throw new Error('deadlock detected');
      return { allowance: 10, billed: 0, granted: Math.min(c.want, 10) };
    };
    const rs = Array.from({ length: 3 }, () => refusal(q.quota.reserve(P, 1)));
    expect(await Promise.all(rs)).toEqual(['unreadable', 'unreadable', 'unreadable']);
    expect(q.store.calls).toHaveLength(1);
    fail = false;
    expect(await q.quota.reserve(P, 1)).toEqual({ projectId: P, events: 1 });
    expect(q.store.calls).toHaveLength(2);
    // Nothing was admitted by the failed renewal: nothing of it counts as in flight.
    expect(q.store.calls[1]).toMatchObject({ inflight: 0 });
  });
});

/**
 * The lease store as PgLeaseStore computes it (src/limits/quota-leases.ts), over a ledger and lease
 * rows held here: others' live leases count as what they may still bill, what is left is shared
 * among the instances holding room, and the ledger is charged when a batch commits.
 */
class PgLike {
  readonly ledger = new Map<string, number>();
  readonly rows = new Map<string, { events: number; billedAtGrant: number; holdUntil: number }>();
  constructor(
    public allowance: number | null,
    private readonly now: () => number,
    private readonly leaseMs: number,
    private readonly holdMs: number,
  ) {}

  billed(): number {
    let n = 0;
    for (const v of this.ledger.values()) n += v;
    return n;
  }

  bill(instance: string, n: number): void {
    this.ledger.set(instance, (this.ledger.get(instance) ?? 0) + n);
  }

  store(instance: string): LeaseStore & { calls: number } {
    const self = this;
    return {
      calls: 0,
      async renew(_projectId: string, inflight: number, want: number): Promise<Grant> {
        this.calls++;
        await Promise.resolve();
        const billed = self.billed();
        if (self.allowance === null) return { allowance: null, billed, granted: Number.MAX_SAFE_INTEGER };
        let others = 0;
        let holders = 0;
        for (const [id, row] of self.rows) {
          if (id === instance || row.holdUntil <= self.now()) continue;
          const outstanding = Math.max(0, row.events - ((self.ledger.get(id) ?? 0) - row.billedAtGrant));
          others += outstanding;
          if (outstanding > 0) holders++;
        }
        const remaining = self.allowance - billed - others - inflight;
        const share = Math.ceil(remaining / (holders + 1));
        const granted = Math.max(0, Math.min(want, remaining, Math.max(share, 1)));
        self.rows.set(instance, {
          events: inflight + granted,
          billedAtGrant: self.ledger.get(instance) ?? 0,
          holdUntil: self.now() + self.leaseMs + self.holdMs,
        });
        return { allowance: self.allowance, billed, granted };
      },
    };
  }
}

/**
 * Instances sharing one PgLike, each with concurrent clients that send batches until refused with
 * "exhausted"; "settling" is retried after a second (Retry-After), "unreadable" fails the test.
 * `billedOf(batch)` says how many events of a batch turn out billed (the rest are redeliveries).
 */
async function simulate(o: {
  allowance: number;
  instances: number;
  clients: number;
  batch: number;
  billedOf?: (n: number) => number;
  rounds?: number;
}) {
  let t = 0;
  const now = () => t;
  const pg = new PgLike(o.allowance, now, 2000, 15_000);
  const db: Db = { allowance: o.allowance, billed: 0 };
  const { sql } = fakeSql(db, () => JAN);
  let admitted = 0;
  let billed = 0;
  let settling = 0;
  const outcomes: string[] = [];
  const instances = Array.from({ length: o.instances }, (_, i) => {
    const store = pg.store(`i${i}`);
    return {
      id: `i${i}`,
      store,
      quota: new Quota(sql, store, { ttlMs: 1000, leaseMs: 2000, waitLimitMs: WAIT, now, wallNow: () => JAN }),
    };
  });
  async function client(inst: (typeof instances)[number], k: number): Promise<void> {
    for (let round = 0; round < (o.rounds ?? 1000); round++) {
      let r: Reservation;
      try {
        r = await inst.quota.reserve(P, o.batch);
      } catch (err) {
        const reason = (err as QuotaRefusal).reason;
        if (reason === 'exhausted') {
          outcomes.push(reason);
          return;
        }
        expect(reason).toBe('settling');
        settling++;
        for (let i = 0; i < 3; i++) await turn();
        t += 1000;
        continue;
      }
      admitted += o.batch;
      // The commit takes a while; clients of other instances move meanwhile.
      for (let i = 0; i < 1 + (k % 3); i++) await turn();
      const b = (o.billedOf ?? ((n) => n))(o.batch);
      pg.bill(inst.id, b);
      db.billed += b;
      billed += b;
      inst.quota.settle(r, b);
    }
    outcomes.push('rounds');
  }
  await Promise.all(instances.flatMap((inst) => Array.from({ length: o.clients }, (_, k) => client(inst, k))));
  return { admitted, billed, settling, outcomes, renewals: instances.map((i) => i.store.calls) };
}

describe('Quota: the allowance is exceeded by at most one batch per instance', () => {
  it('one instance, allowance 50, 40 concurrent clients of 4 events: 50 to 52 billed, then "exhausted"', async () => {
    const s = await simulate({ allowance: 50, instances: 1, clients: 40, batch: 4 });
    expect(s.billed).toBeGreaterThanOrEqual(50);
    expect(s.billed).toBeLessThanOrEqual(52);
    expect(s.admitted).toBe(s.billed);
    expect(s.outcomes).toEqual(Array.from({ length: 40 }, () => 'exhausted'));
  });

  it('one instance, one batch at a time: exactly the batch that crosses the allowance', async () => {
    const s = await simulate({ allowance: 50, instances: 1, clients: 1, batch: 4 });
    expect(s.billed).toBe(52);
    expect(s.outcomes).toEqual(['exhausted']);
  });

  it('three instances on one store, allowance 50, batches of 4: at most 50 + 3 × 4 billed', async () => {
    const s = await simulate({ allowance: 50, instances: 3, clients: 10, batch: 4 });
    expect(s.billed).toBeGreaterThanOrEqual(50);
    expect(s.billed).toBeLessThanOrEqual(50 + 3 * 4);
    expect(s.outcomes).toEqual(Array.from({ length: 30 }, () => 'exhausted'));
  });

  it('a large allowance far from the limit costs few renewals, and still ends within one batch per instance', async () => {
    const s = await simulate({ allowance: 20_000, instances: 2, clients: 8, batch: 100 });
    expect(s.billed).toBeGreaterThanOrEqual(20_000);
    expect(s.billed).toBeLessThanOrEqual(20_000 + 2 * 100);
    // 200 batches: a renewal per thousand-event block or so, not one per batch.
    expect(s.renewals.reduce((a, b) => a + b, 0)).toBeLessThan(100);
  });

  it('redeliveries give their room back: the billed count still ends within one batch of the allowance', async () => {
    // Half of every batch turns out to be redeliveries.
    const s = await simulate({ allowance: 50, instances: 2, clients: 10, batch: 4, billedOf: (n) => n / 2 });
    expect(s.billed).toBeGreaterThanOrEqual(50);
    expect(s.billed).toBeLessThanOrEqual(50 + 2 * 4);
    expect(s.admitted).toBeGreaterThan(s.billed);
  });
});
