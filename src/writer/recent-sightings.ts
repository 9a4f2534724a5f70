// Which users got a sighting (first and last seen) written lately, so that a busy user's row is not
// rewritten by every batch. With real churn (users drawn from millions) almost every lookup misses,
// so the cost of a lookup and of remembering is what counts: fixed typed arrays, no string built, no
// object kept per user, nothing for the garbage collector. A slot holds one (project, user) exactly;
// a collision only evicts, so the worst case is a row written again, never a sighting skipped.

const EMPTY = 0;

export class RecentSightings {
  private readonly users: Float64Array;
  private readonly projects: Int32Array;
  /** Seconds since construction, so a slot takes 16 bytes. */
  private readonly writtenAt: Uint32Array;
  private readonly origin: number;
  private readonly mask: number;
  private readonly projectSlots = new Map<string, number>();

  /** `capacity` is rounded up to a power of two; 2^21 slots take 32 MiB once all are in use. */
  constructor(
    private readonly windowMs: number,
    capacity: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    const size = 2 ** Math.ceil(Math.log2(Math.max(2, capacity)));
    this.users = new Float64Array(size);
    this.projects = new Int32Array(size);
    this.writtenAt = new Uint32Array(size);
    this.origin = now();
    this.mask = size - 1;
  }

  /** True when this user's sighting was written within the window. */
  fresh(projectId: string, userId: string): boolean {
    const project = this.projectSlots.get(projectId);
    const user = Number(userId);
    if (project === undefined || !(user <= Number.MAX_SAFE_INTEGER)) return false;
    const i = this.slot(project, user);
    return this.projects[i] === project && this.users[i] === user && this.seconds() - this.writtenAt[i]! < this.windowMs / 1000;
  }

  /** After the commit that wrote the row. Ids past 2^53 are not kept (their rows are simply rewritten). */
  remember(projectId: string, userId: string): void {
    const user = Number(userId);
    if (!(user <= Number.MAX_SAFE_INTEGER)) return;
    let project = this.projectSlots.get(projectId);
    if (project === undefined) {
      // Slot numbers are never reused while entries may name them; past 2^20 projects start over.
      if (this.projectSlots.size >= 1 << 20) this.clear();
      project = this.projectSlots.size + 1;
      this.projectSlots.set(projectId, project);
    }
    const i = this.slot(project, user);
    this.projects[i] = project;
    this.users[i] = user;
    this.writtenAt[i] = this.seconds();
  }

  private seconds(): number {
    return Math.floor((this.now() - this.origin) / 1000);
  }

  private slot(project: number, user: number): number {
    let h = Math.imul((user >>> 0) ^ Math.imul(Math.floor(user / 4294967296), 0x9e3779b1) ^ Math.imul(project, 0x85ebca6b), 0xc2b2ae35);
    h ^= h >>> 16;
    return h & this.mask;
  }

  private clear(): void {
    this.projectSlots.clear();
    this.projects.fill(EMPTY);
  }
}
