// Which profiles were written lately, so that a user whose profile arrives with every batch (a
// mini-app's initData, a bot's users[]) is not rewritten each time: the same profile again within
// the window is skipped. Two generations rotate every window, which bounds memory by the profiles
// written in two windows (and by maxEntries). Keyed per project, then by user id as received: no
// string is built per lookup. Bare sightings have their own cache (RecentSightings).

type Generation = Map<string, Map<string, string>>;

export class RecentProfiles {
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

  /** True when this user's row was written within the window with this very profile (`fingerprint`). */
  fresh(projectId: string, userId: string, fingerprint: string): boolean {
    return (this.current.get(projectId)?.get(userId) ?? this.previous.get(projectId)?.get(userId)) === fingerprint;
  }

  /** After the commit that wrote the profile. */
  remember(projectId: string, userId: string, fingerprint: string): void {
    let users = this.current.get(projectId);
    if (users === undefined) this.current.set(projectId, (users = new Map()));
    if (!users.has(userId)) this.entries++;
    users.set(userId, fingerprint);
  }
}
