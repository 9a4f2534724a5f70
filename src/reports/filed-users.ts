// The users the report tables already file as active on given days, remembered by the aggregator between windows.
// A user the next window names only on those days, without a campaign or a payment, changes nothing but the counts
// by type: their events fold as counts alone, with no probe of report_users and report_active. A bot's active users
// come back window after window, and those probes were most of a window's cost in the database (8,000 users: ~0.25 s
// of a 10 s window's 0.8 s).
//
// What is remembered holds only while nothing but this aggregator changed those rows since it last folded: the
// stamp is the watermark this instance left and the count of changes by anything else (migration 13's triggers: an
// erasure, a hand edit). Another instance's fold moves the watermark; either makes the aggregator forget it all.

/** Users remembered, over all projects: ~100 bytes each. */
const MAX_USERS = 100_000;
/** Days remembered per user: the latest. */
const MAX_DAYS = 4;

export class FiledUsers {
  /** Per project, per user: days (since 1970-01-01) the user is filed on under their campaign as it stands. */
  private readonly projects = new Map<string, Map<number, number[]>>();
  private size = 0;
  private stamp: string | null = null;

  /** Forgets everything unless the report tables are as this aggregator left them (`stamp`: see above). */
  check(stamp: string): void {
    if (stamp !== this.stamp) this.clear();
  }

  /** After a fold has committed: the tables as it left them. */
  settle(stamp: string): void {
    this.stamp = stamp;
  }

  clear(): void {
    this.projects.clear();
    this.size = 0;
    this.stamp = null;
  }

  /** Whether the user is filed on every one of `days`. */
  holds(projectId: string, user: number, days: readonly number[]): boolean {
    const known = this.projects.get(projectId)?.get(user);
    return known !== undefined && days.every((d) => known.includes(d));
  }

  /** A folded window filed the user on `days`, under a campaign it did not change. */
  add(projectId: string, user: number, days: readonly number[]): void {
    let users = this.projects.get(projectId);
    if (users === undefined) this.projects.set(projectId, (users = new Map()));
    const known = users.get(user);
    // Deleted and set again: a Map iterates in insertion order, so the first entries are the least recent.
    if (known !== undefined) users.delete(user);
    else this.size++;
    const merged = known === undefined ? [...days] : [...known.filter((d) => !days.includes(d)), ...days];
    users.set(user, merged.length > MAX_DAYS ? merged.slice(-MAX_DAYS) : merged);
    if (this.size > MAX_USERS) this.evict(projectId, users);
  }

  /** A folded window may have changed the user's campaign: their days are filed anew as they come back. */
  forget(projectId: string, user: number): void {
    const users = this.projects.get(projectId);
    if (!users?.delete(user)) return;
    this.size--;
    if (users.size === 0) this.projects.delete(projectId);
  }

  get users(): number {
    return this.size;
  }

  /** The least recent user of the project just added to, or of another project when that one holds only this. */
  private evict(projectId: string, current: Map<number, number[]>): void {
    let from: [string, Map<number, number[]>] | undefined = current.size > 1 ? [projectId, current] : undefined;
    if (from === undefined)
      for (const entry of this.projects)
        if (entry[1] !== current && entry[1].size > 0) {
          from = entry;
          break;
        }
    const oldest = from?.[1].keys().next().value;
    if (from === undefined || oldest === undefined) return;
    from[1].delete(oldest);
    this.size--;
    if (from[1].size === 0) this.projects.delete(from[0]);
  }
}
