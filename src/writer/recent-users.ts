// Which user rows were written lately, so that a busy user's row is not rewritten by every batch:
// a sighting within the window, or the same profile again, is skipped. Two generations rotate every
// window, which bounds memory by the users active in two windows (and by maxEntries). Keyed per
// project, then by user id as received: no string is built per lookup.

type Generation = Map<string, Map<string, string>>;

export class RecentUsers {
  private current: Generation = new Map();
  private previous: Generation = new Map();
  private entries = 0;
  private rotatedAt: number;

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.rotatedAt = now();
  }

  /** Call once per batch, before lookups: starts a new generation when the window has passed. */
  tick(): void {
    const t = this.now();
    if (t - this.rotatedAt < this.windowMs && this.entries < this.maxEntries) return;
    this.previous = this.current;
    this.current = new Map();
    this.entries = 0;
    this.rotatedAt = t;
  }

  /** True when the user's row was written within the window (with this `fingerprint`, when one is given). */
  fresh(projectId: string, userId: string, fingerprint?: string): boolean {
    const seen = this.current.get(projectId)?.get(userId) ?? this.previous.get(projectId)?.get(userId);
    return fingerprint === undefined ? seen !== undefined : seen === fingerprint;
  }

  /** After the commit that wrote the row. */
  remember(projectId: string, userId: string, fingerprint = ''): void {
    let users = this.current.get(projectId);
    if (users === undefined) this.current.set(projectId, (users = new Map()));
    if (!users.has(userId)) this.entries++;
    users.set(userId, fingerprint);
  }
}
