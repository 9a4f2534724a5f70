// Which users got a sighting (first and last seen) written lately, so that a busy user's row is not
// rewritten by every batch. With real churn (users drawn from millions) almost every lookup misses,
// and with a busy bot almost every one hits, so a lookup must be cheap either way: one fixed typed
// array, a slot per (project, user) holding the user id and, packed in a second number, the project
// and when it was written, so that a lookup reads one cache line, builds no string and leaves
// nothing for the garbage collector. A slot holds one (project, user) exactly; a collision only
// evicts, so the worst case is a row written again, never a sighting skipped.

const PROJECT_UNIT = 2 ** 32;

export class RecentSightings {
  /** [user id, project × 2^32 + seconds written] per slot. */
  private readonly slots: Float64Array;
  private readonly mask: number;
  private readonly origin: number;
  private readonly projectSlots = new Map<string, number>();

  /** `capacity` is rounded up to a power of two; 2^21 slots take 32 MiB once all are in use. */
  constructor(
    private readonly windowMs: number,
    capacity: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    const size = 2 ** Math.ceil(Math.log2(Math.max(2, capacity)));
    this.slots = new Float64Array(2 * size);
    this.mask = size - 1;
    this.origin = now();
  }

  /** The project's number for freshIn(), looked up once per request rather than once per user (0: none yet). */
  project(projectId: string): number {
    return this.projectSlots.get(projectId) ?? 0;
  }

  /** The clock of freshIn(), read once per batch: whole seconds since this cache was made. */
  seconds(): number {
    return Math.floor((this.now() - this.origin) / 1000);
  }

  /** True when this user's sighting was written within the window; `project` from project(), `now` from seconds(). */
  freshIn(project: number, userId: string, now: number): boolean {
    const user = Number(userId);
    if (project === 0 || !(user <= Number.MAX_SAFE_INTEGER)) return false;
    const at = 2 * this.slot(project, user);
    if (this.slots[at] !== user) return false;
    const meta = this.slots[at + 1]!;
    const owner = Math.floor(meta / PROJECT_UNIT);
    return owner === project && now - (meta - owner * PROJECT_UNIT) < this.windowMs / 1000;
  }

  /**
   * After the commit that wrote the row; `now` from seconds(). Ids past 2^53 are not kept (their rows are simply
   * rewritten).
   */
  remember(projectId: string, userId: string, now = this.seconds()): void {
    const user = Number(userId);
    if (!(user <= Number.MAX_SAFE_INTEGER)) return;
    let project = this.projectSlots.get(projectId);
    if (project === undefined) {
      // Numbers are never reused while entries may name them; past 2^20 projects start over.
      if (this.projectSlots.size >= 1 << 20) {
        this.projectSlots.clear();
        this.slots.fill(0);
      }
      project = this.projectSlots.size + 1;
      this.projectSlots.set(projectId, project);
    }
    const at = 2 * this.slot(project, user);
    this.slots[at] = user;
    this.slots[at + 1] = project * PROJECT_UNIT + now;
  }

  private slot(project: number, user: number): number {
    let h = Math.imul(
      (user >>> 0) ^ Math.imul(Math.floor(user / 4294967296), 0x9e3779b1) ^ Math.imul(project, 0x85ebca6b),
      0xc2b2ae35,
    );
    h ^= h >>> 16;
    return h & this.mask;
  }
}
