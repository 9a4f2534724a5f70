// Which user rows were written lately, so that a busy user's row is not rewritten by every batch:
// a sighting within the window, or the same profile again, is skipped. Two generations of maps
// rotate every window, which bounds memory by the users active in two windows (and by maxEntries).

export class RecentUsers {
  private current = new Map<string, string>();
  private previous = new Map<string, string>();
  private rotatedAt: number;

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.rotatedAt = now();
  }

  /** True when `key` was written within the window (with this `fingerprint`, when one is given). */
  fresh(key: string, fingerprint?: string): boolean {
    this.maybeRotate();
    const seen = this.current.get(key) ?? this.previous.get(key);
    return fingerprint === undefined ? seen !== undefined : seen === fingerprint;
  }

  /** After the commit that wrote these rows. */
  remember(key: string, fingerprint = ''): void {
    this.maybeRotate();
    this.current.set(key, fingerprint);
  }

  private maybeRotate(): void {
    const t = this.now();
    if (t - this.rotatedAt < this.windowMs && this.current.size < this.maxEntries) return;
    this.previous = this.current;
    this.current = new Map();
    this.rotatedAt = t;
  }
}
