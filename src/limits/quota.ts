// Quota without a database round trip per request: each project's plan and this month's billed
// count are cached and kept current by our own commits plus a periodic re-read (for other
// instances and plan changes). A request reserves its accepted events before it is written, and is
// admitted only while billed + reserved stays under the allowance, so the allowance is exceeded
// by at most the last admitted batch. Near the limit a request waits for in-flight batches to settle
// rather than being refused for events that may turn out to be redeliveries.
import type { Sql } from '../db/connect.js';
import { readUsage } from '../db/usage.js';

/**
 * exhausted: the allowance is used up (final); unreadable: the plan could not be read; settling:
 * the batches that may still free room did not settle in time (both worth a retry).
 */
export class QuotaRefusal extends Error {
  constructor(readonly reason: 'exhausted' | 'unreadable' | 'settling') {
    super(`quota: ${reason}`);
    this.name = 'QuotaRefusal';
  }
}

interface Plan {
  allowance: number | null;
  billed: number;
  reserved: number;
  month: string;
  loadedAt: number;
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

export class Quota {
  private readonly plans = new Map<string, Plan>();
  private readonly loading = new Map<string, Promise<Plan>>();
  readonly stats = { hits: 0, misses: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly ttlMs: number,
    private readonly waitLimitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses when the allowance is already used up or the plan cannot be read. */
  async check(projectId: string): Promise<void> {
    const plan = await this.plan(projectId);
    if (plan.allowance !== null && plan.billed >= plan.allowance) throw new QuotaRefusal('exhausted');
  }

  /** Reserves `events` for a write; waits while in-flight batches may still free room. */
  async reserve(projectId: string, events: number): Promise<Reservation> {
    const deadline = this.now() + this.waitLimitMs;
    for (;;) {
      const plan = await this.plan(projectId);
      if (plan.allowance === null) return NONE;
      if (plan.billed >= plan.allowance) throw new QuotaRefusal('exhausted');
      if (plan.billed + plan.reserved < plan.allowance) {
        plan.reserved += events;
        return { projectId, events };
      }
      const left = deadline - this.now();
      if (left <= 0) throw new QuotaRefusal('settling');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          plan.waiters.delete(done);
          resolve();
        }
        plan.waiters.add(done);
      });
    }
  }

  /** After the commit: the reservation becomes what was actually billed. */
  settle(r: Reservation, billed: number): void {
    const plan = this.plans.get(r.projectId);
    if (plan === undefined) return;
    plan.reserved = Math.max(0, plan.reserved - r.events);
    plan.billed += billed;
    for (const w of [...plan.waiters]) w();
  }

  release(r: Reservation): void {
    this.settle(r, 0);
  }

  /** A plan change on this instance applies at once. */
  forget(projectId: string): void {
    const plan = this.plans.get(projectId);
    if (plan !== undefined) plan.loadedAt = -Infinity;
  }

  private async plan(projectId: string): Promise<Plan> {
    const nowMs = this.now();
    const plan = this.plans.get(projectId);
    if (plan !== undefined && plan.month === currentMonth(nowMs)) {
      this.stats.hits++;
      if (nowMs - plan.loadedAt >= this.ttlMs) {
        // Refresh in the background; only a plan changed here (loadedAt = -Infinity) is awaited.
        const refresh = this.load(projectId);
        if (plan.loadedAt === -Infinity) return refresh;
        refresh.catch(() => undefined);
      }
      return plan;
    }
    this.stats.misses++;
    return this.load(projectId);
  }

  private load(projectId: string): Promise<Plan> {
    let p = this.loading.get(projectId);
    if (p !== undefined) return p;
    p = this.read(projectId).finally(() => this.loading.delete(projectId));
    this.loading.set(projectId, p);
    return p;
  }

  private async read(projectId: string): Promise<Plan> {
    const startedAt = this.now();
    let usage;
    try {
      usage = await readUsage(this.sql, projectId);
    } catch {
      throw new QuotaRefusal('unreadable');
    }
    const allowance = usage?.eventAllowance ?? null;
    const dbBilled = usage?.eventsBilled ?? 0;
    const month = usage?.month ?? currentMonth(startedAt);
    const known = this.plans.get(projectId);
    if (known !== undefined && known.month === month) {
      // Our own commits may postdate the snapshot; others' show up in it. Take the larger.
      known.allowance = allowance;
      known.billed = Math.max(known.billed, dbBilled);
      known.loadedAt = startedAt;
      for (const w of [...known.waiters]) w();
      return known;
    }
    const plan: Plan = { allowance, billed: dbBilled, reserved: known?.reserved ?? 0, month, loadedAt: startedAt, waiters: known?.waiters ?? new Set() };
    this.plans.set(projectId, plan);
    return plan;
  }
}
