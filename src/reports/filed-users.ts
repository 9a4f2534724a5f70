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
//
// Full, a project holding an equal share or more makes room itself (its least recently folded user first), and one
// under it takes the room of the project holding the most: a tenant with more active users than the memory holds
// turns its own over, not its neighbours'. The project holding the most is kept at hand (projects by size), not
// looked for: with many projects at an equal share, a scan per user added made a window O(users × projects).

/** Users remembered, over all projects: ~150 bytes each. */
const MAX_USERS = 100_000;
/** Days remembered per user: the latest. */
export const MAX_DAYS = 4;

export class FiledUsers {
  /**
   * Per project, per user: days (since 1970-01-01) the user is filed on under their campaign as it stands; each
   * project's users in the order they were last folded, least recent first.
   */
  private readonly projects = new Map<string, Map<number, number[]>>();
  /** Users held, over all projects. */
  private count = 0;
  /** Projects by the number of users they hold. */
  private readonly bySize = new Map<number, Set<string>>();
  /** The most users a project holds, or more: lowered only when asked for (largest()). */
  private maxSize = 0;
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
    this.projects.clear();
    this.bySize.clear();
    this.count = 0;
    this.maxSize = 0;
    this.stamp = null;
  }

  /** Whether the user is filed on every one of `days`. */
  holds(projectId: string, user: number, days: readonly number[]): boolean {
    const known = this.projects.get(projectId)?.get(user);
    const held = known !== undefined && days.every((d) => known.includes(d));
    if (held) this.stats.hits++;
    else this.stats.misses++;
    return held;
  }

  /** A folded window filed the user on `days`, under a campaign it did not change. */
  add(projectId: string, user: number, days: readonly number[]): void {
    let users = this.projects.get(projectId);
    if (users === undefined) this.projects.set(projectId, (users = new Map()));
    const known = users.get(user);
    // Deleted and set again: a Map iterates in insertion order, so its first entry is the least recently folded.
    if (known !== undefined) users.delete(user);
    else this.count++;
    const merged = known === undefined ? [...days] : [...known.filter((d) => !days.includes(d)), ...days];
    users.set(user, merged.length > MAX_DAYS ? merged.slice(-MAX_DAYS) : merged);
    if (known === undefined) this.resized(projectId, users.size - 1, users.size);
    if (this.count > MAX_USERS) this.makeRoom(projectId, users);
  }

  /**
   * A window may have changed the campaigns of any user of these projects: their days are filed anew as they come
   * back.
   */
  forgetProjects(projectIds: Iterable<string>): void {
    for (const projectId of projectIds) this.dropProject(projectId);
  }

  /** A folded window may have changed the user's campaign: their days are filed anew as they come back. */
  forget(projectId: string, user: number): void {
    const users = this.projects.get(projectId);
    if (users?.delete(user)) this.removed(projectId, users);
  }

  get size(): number {
    return this.count;
  }

  /** One user less, for the user just added to `adding` (whose users are `users`): see the head of this file. */
  private makeRoom(adding: string, users: Map<number, number[]>): void {
    const projectId = users.size * this.projects.size < MAX_USERS ? this.largest() : adding;
    const from = this.projects.get(projectId)!;
    from.delete(from.keys().next().value!);
    this.removed(projectId, from);
  }

  /** The project has lost a user from `users`, its own. */
  private removed(projectId: string, users: Map<number, number[]>): void {
    this.count--;
    this.resized(projectId, users.size + 1, users.size);
    if (users.size === 0) this.projects.delete(projectId);
  }

  private dropProject(projectId: string): void {
    const users = this.projects.get(projectId);
    if (users === undefined) return;
    this.count -= users.size;
    this.projects.delete(projectId);
    this.resized(projectId, users.size, 0);
  }

  /** Moves the project between sizes (0: none). */
  private resized(projectId: string, from: number, to: number): void {
    const was = this.bySize.get(from);
    if (was?.delete(projectId) && was.size === 0) this.bySize.delete(from);
    if (to === 0) return;
    const now = this.bySize.get(to);
    if (now === undefined) this.bySize.set(to, new Set([projectId]));
    else now.add(projectId);
    if (to > this.maxSize) this.maxSize = to;
  }

  /**
   * The project holding the most (asked only when the memory is over full). maxSize rises by one at most per user
   * added, so lowering it here costs, over all calls, no more than the adds did.
   */
  private largest(): string {
    while (this.maxSize > 0 && !this.bySize.has(this.maxSize)) this.maxSize--;
    const projectId = this.bySize.get(this.maxSize)?.values().next().value;
    if (projectId === undefined) throw new Error('FiledUsers: no project holds a user');
    return projectId;
  }
}
