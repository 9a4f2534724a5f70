// The users the report tables already file as active on given days, remembered by the aggregator between windows.
// A user the next window names only on those days, without a campaign or a payment, changes nothing but the counts
// by type: their events fold as counts alone, with no probe of report_users and report_active. A bot's active users
// come back window after window, and those probes were most of a window's cost in the database (8,000 users: ~0.25 s
// of a 10 s window's 0.8 s).
//
// What is remembered holds only while nothing but this aggregator changed those rows since it last folded: the
// stamp is the watermark this instance left and the count of changes by anything else (migration 13's triggers: an
// erasure, a hand edit). Another instance's fold moves the watermark; either makes the aggregator forget it all. A
// window's rows that no summary holds may set campaigns: their users are forgotten, or, past a number, their projects'.

import { Turns } from './turns.js';

/** Users remembered, over all projects: ~150 bytes each. */
const MAX_USERS = 100_000;
/** Days remembered per user: the latest. */
export const MAX_DAYS = 4;

export class FiledUsers {
  /** Per "project user": days (since 1970-01-01) the user is filed on under their campaign as it stands. */
  private readonly users = new Map<string, number[]>();
  private stamp: string | null = null;
  /** Users asked about (tg_ingest_cache_requests_total): a hit is a user counted without a probe. */
  readonly stats = { hits: 0, misses: 0 };

  /** Forgets everything unless the report tables are as this aggregator left them (`stamp`: see above). */
  check(stamp: string): void {
    if (stamp !== this.stamp) this.clear();
  }

  /** After a fold has committed: the tables as it left them. */
  settle(stamp: string): void {
    this.stamp = stamp;
  }

  clear(): void {
    this.users.clear();
    this.stamp = null;
  }

  /** Whether the user is filed on every one of `days`. */
  holds(projectId: string, user: number, days: readonly number[]): boolean {
    const known = this.users.get(`${projectId} ${user}`);
    const held = known !== undefined && days.every((d) => known.includes(d));
    if (held) this.stats.hits++;
    else this.stats.misses++;
    return held;
  }

  /** A folded window filed the user on `days`, under a campaign it did not change. */
  add(projectId: string, user: number, days: readonly number[]): void {
    const key = `${projectId} ${user}`;
    const known = this.users.get(key);
    // Deleted and set again: a Map iterates in insertion order, so its first entry is the least recently folded.
    if (known !== undefined) this.users.delete(key);
    const merged = known === undefined ? [...days] : [...known.filter((d) => !days.includes(d)), ...days];
    this.users.set(key, merged.length > MAX_DAYS ? merged.slice(-MAX_DAYS) : merged);
    if (this.users.size > MAX_USERS) this.users.delete(this.users.keys().next().value!);
  }

  /**
   * A window may have changed the campaigns of any user of these projects: their days are filed anew as they come
   * back. One pass over what is remembered, in turns of the main thread.
   */
  async forgetProjects(projectIds: ReadonlySet<string>): Promise<void> {
    const turn = new Turns();
    for (const key of this.users.keys()) {
      const pause = turn.take();
      if (pause) await pause;
      if (projectIds.has(key.slice(0, key.indexOf(' ')))) this.users.delete(key);
    }
  }

  /** A folded window may have changed the user's campaign: their days are filed anew as they come back. */
  forget(projectId: string, user: number): void {
    this.users.delete(`${projectId} ${user}`);
  }

  get size(): number {
    return this.users.size;
  }
}
