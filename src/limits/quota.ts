// Quota without a database round trip per request, exact across instances. Each instance admits
// events against a lease: a block of the project's monthly allowance granted to it in PostgreSQL
// (a short transaction under an advisory lock), which every other instance counts as taken until
// the events are billed or the lease's hold ends. A request is admitted while its instance's lease
// has room, so the allowance is exceeded by at most one batch per instance, whatever the timing.
// Far from the limit a lease is a large block renewed every few seconds; near it, blocks shrink to a
// share of what is left, so no instance sits on room another needs. Between renewals, the allowance and
// this month's billed count are cached for the cheap 402 check made before a body is read.
import type { Sql } from '../db/connect.js';
import { LookupFailed, RefreshingCache } from '../cache/refreshing-cache.js';
import { readUsage } from '../db/usage.js';

/**
 * exhausted: the allowance is used up (final); unreadable: the allowance could not be read; settling:
 * what is left of the allowance is held by batches still being committed, here or on another
 * instance (worth a retry).
 */
export class QuotaRefusal extends Error {
  constructor(readonly reason: 'exhausted' | 'unreadable' | 'settling') {
    super(`quota: ${reason}`);
    this.name = 'QuotaRefusal';
  }
}

/** What a lease renewal found and granted. */
export interface Grant {
  allowance: number | null;
  /** Billed this month by every instance. */
  billed: number;
  /** New events this instance may admit (its events in flight are counted apart, in the lease it holds). */
  granted: number;
}

/** The lease store: PostgreSQL for the service, anything for a unit test. */
export interface LeaseStore {
  /**
   * Replaces this instance's lease of the project's month: grants up to `want` new events out of
   * what neither the ledger nor another instance's live lease holds (shared among the instances
   * holding room), and records `inflight` (admitted, not billed yet) plus the grant as this
   * instance's, for the others to count.
   */
  renew(projectId: string, inflight: number, want: number): Promise<Grant>;
}

/** A project's allowance and what it billed in a month, as cached. */
interface MonthUsage {
  allowance: number | null;
  billed: number;
  month: string;
}

interface Lease {
  month: string;
  /** New events this lease admits; events in flight from before it are accounted apart. */
  room: number;
  used: number;
  /** Admission under this lease stops then (monotonic ms). */
  until: number;
  startedAt: number;
  renewing: Promise<void> | null;
  /** The allowance changed while this lease was being renewed: the grant admits nothing. */
  stale: boolean;
}

/** Per project: events admitted and not settled yet, and who waits for them. */
interface InFlight {
  events: number;
  waiters: Set<() => void>;
}

export interface Reservation {
  projectId: string;
  events: number;
}

const NONE: Reservation = Object.freeze({ projectId: '', events: 0 });

let monthCache = { month: '', until: 0 };

/** "YYYY-MM" in UTC, recomputed only when a month boundary has passed. */
function currentMonth(nowMs: number): string {
  if (nowMs < monthCache.until && nowMs >= monthCache.until - 32 * 86_400_000) return monthCache.month;
  const d = new Date(nowMs);
  monthCache = { month: d.toISOString().slice(0, 7), until: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  return monthCache.month;
}

export interface QuotaOptions {
  /** How long a cached allowance is trusted. */
  ttlMs: number;
  /** How long a lease admits events; renewed before that when it runs out of room. */
  leaseMs: number;
  /** How long a request may wait near the limit for this instance's in-flight batches to settle. */
  waitLimitMs: number;
  /** The smallest block a lease asks for far from the limit. */
  minBlock?: number;
  now?: () => number;
  /** Wall-clock ms, for the month. */
  wallNow?: () => number;
}

export class Quota {
  private readonly allowances: RefreshingCache<MonthUsage>;
  private readonly leases = new Map<string, Lease>();
  private readonly inflight = new Map<string, InFlight>();
  private renewals = 0;
  private readonly now: () => number;
  private readonly wallNow: () => number;

  constructor(
    private readonly sql: Sql,
    private readonly store: LeaseStore,
    private readonly o: QuotaOptions,
  ) {
    this.now = o.now ?? (() => performance.now());
    this.wallNow = o.wallNow ?? Date.now;
    // Refreshed in the background while younger than twice the TTL, so a change made through
    // another instance is in force within that; an older one (an idle project) is re-read first.
    this.allowances = new RefreshingCache((projectId) => this.read(projectId), {
      what: 'allowance',
      ttlMs: o.ttlMs,
      maxStaleMs: 2 * o.ttlMs,
      max: 100_000,
      negativeMax: 1,
      now: this.now,
    });
  }

  /** Lookups of the cached allowance (hits, misses) and lease renewals: read by metrics. */
  get stats(): { hits: number; misses: number; renewals: number } {
    return { ...this.allowances.stats, renewals: this.renewals };
  }

  /** Refuses when the allowance is already used up or cannot be read. */
  async check(projectId: string): Promise<void> {
    const entry = await this.allowance(projectId);
    if (entry.allowance !== null && entry.billed >= entry.allowance) throw new QuotaRefusal('exhausted');
  }

  private flight(projectId: string): InFlight {
    let f = this.inflight.get(projectId);
    if (f === undefined) this.inflight.set(projectId, (f = { events: 0, waiters: new Set() }));
    return f;
  }

  /** Admits `events` against this instance's lease, renewing it when it has no room left. */
  async reserve(projectId: string, events: number): Promise<Reservation> {
    const entry = await this.allowance(projectId);
    if (entry.allowance === null) return NONE;
    const deadline = this.now() + this.o.waitLimitMs;
    const flight = this.flight(projectId);
    for (let renewed = false; ; ) {
      const month = currentMonth(this.wallNow());
      const lease = this.leases.get(projectId);
      if (
        lease !== undefined &&
        lease.renewing === null &&
        lease.month === month &&
        this.now() < lease.until &&
        lease.used < lease.room
      ) {
        lease.used += events;
        flight.events += events;
        return { projectId, events };
      }
      if (entry.billed >= (entry.allowance ?? Infinity)) throw new QuotaRefusal('exhausted');
      if (!renewed) {
        await this.renew(projectId, month, events);
        renewed = true;
        continue;
      }
      // No room after a renewal: this instance's own batches may still turn out to be redeliveries
      // and give room back, so wait for them; room held by another instance is worth a retry.
      const left = deadline - this.now();
      if (flight.events === 0 || left <= 0) throw new QuotaRefusal('settling');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          flight.waiters.delete(done);
          resolve();
        }
        flight.waiters.add(done);
      });
      renewed = false;
    }
  }

  /** After the commit: the events are billed (or not), and stop counting as in flight. */
  settle(r: Reservation, billed: number): void {
    if (r.events === 0) return;
    const flight = this.inflight.get(r.projectId);
    if (flight !== undefined) {
      flight.events = Math.max(0, flight.events - r.events);
      for (const w of [...flight.waiters]) w();
    }
    // Events not billed (redeliveries, free reports) give their room back.
    const lease = this.leases.get(r.projectId);
    if (lease !== undefined && billed < r.events) lease.used = Math.max(0, lease.used - (r.events - billed));
    const entry = this.allowances.peek(r.projectId);
    if (entry !== undefined) entry.billed += billed;
  }

  release(r: Reservation): void {
    this.settle(r, 0);
  }

  /** An allowance changed through this instance applies here at once. */
  forget(projectId: string): void {
    this.allowances.delete(projectId);
    this.expireLease(projectId);
  }

  /**
   * The next request renews the lease against the entry allowance. A renewal under way is not
   * dropped (a second one beside it would record less in flight than this instance admits): its
   * grant is marked to admit nothing, and the renewal after it asks again.
   */
  private expireLease(projectId: string): void {
    const lease = this.leases.get(projectId);
    if (lease === undefined) return;
    lease.until = 0;
    lease.stale = true;
  }

  private renew(projectId: string, month: string, events: number): Promise<void> {
    const prev = this.leases.get(projectId);
    if (prev?.renewing) return prev.renewing;
    // Sized for twice what the last lease admitted in its lifetime, at least minBlock.
    const rate = prev === undefined ? 0 : prev.used / Math.max(1, this.now() - prev.startedAt);
    const want = Math.max(events, this.o.minBlock ?? 1000, Math.ceil(rate * this.o.leaseMs * 2));
    const holder: Lease = { month, room: 0, used: 0, until: 0, startedAt: this.now(), renewing: null, stale: false };
    holder.renewing = (async () => {
      let grant: Grant;
      try {
        grant = await this.store.renew(projectId, this.flight(projectId).events, want);
      } catch {
        throw new QuotaRefusal('unreadable');
      }
      this.renewals++;
      const entry = this.allowances.peek(projectId);
      if (entry !== undefined && entry.month === month) {
        entry.allowance = grant.allowance;
        entry.billed = Math.max(entry.billed, grant.billed);
      }
      const now = this.now();
      const until = holder.stale ? 0 : now + this.o.leaseMs;
      this.leases.set(projectId, {
        month,
        room: grant.granted,
        used: 0,
        until,
        startedAt: now,
        renewing: null,
        stale: false,
      });
    })().finally(() => {
      holder.renewing = null;
    });
    this.leases.set(projectId, holder);
    return holder.renewing;
  }

  /** The project's allowance and billed count this month, from memory (see RefreshingCache) or read. */
  private async allowance(projectId: string): Promise<MonthUsage> {
    for (let reread = false; ; ) {
      let entry: MonthUsage | null;
      try {
        entry = await this.allowances.get(projectId);
      } catch (err) {
        if (err instanceof LookupFailed) throw new QuotaRefusal('unreadable');
        throw err;
      }
      // A new month by this clock: last month's count no longer applies, so it is read once more;
      // the database's month then stands (its clock and ours may disagree around midnight).
      if (entry === null || entry.month === currentMonth(this.wallNow()) || reread) return entry!;
      this.allowances.delete(projectId);
      reread = true;
    }
  }

  private async read(projectId: string): Promise<MonthUsage> {
    const usage = await readUsage(this.sql, projectId);
    const allowance = usage?.eventAllowance ?? null;
    const dbBilled = usage?.eventsBilled ?? 0;
    const month = usage?.month ?? currentMonth(this.wallNow());
    const known = this.allowances.peek(projectId);
    if (known !== undefined && known.month === month) {
      // A lease was granted against the old allowance: it must not admit past a lowered one.
      if (known.allowance !== allowance) this.expireLease(projectId);
      // Our own commits may postdate the snapshot; others' show up in it. Take the larger (a new
      // entry: the one answered meanwhile stays as it was).
      return { allowance, billed: Math.max(known.billed, dbBilled), month };
    }
    return { allowance, billed: dbBilled, month };
  }
}
