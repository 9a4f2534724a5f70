// A global bound on request-body bytes held in memory at once (MAX_INFLIGHT_BODY_BYTES): past it,
// a request is answered 503 with Retry-After instead of growing the process without limit.
export class BodyBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.used;
  }

  /** False (and nothing taken) when `n` more bytes would exceed the budget. */
  take(n: number): boolean {
    if (this.used + n > this.maxBytes) return false;
    this.used += n;
    return true;
  }

  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}

/**
 * Per project, what its requests hold: their bodies once read (already counted by the HTTP front)
 * and what they derive from them (a decompressed body, its rows, its quarantine copies), which
 * counts against the same global budget here. One project may hold at most a quarter of the
 * budget: 57 KiB of gzip can carry 30 MiB of rejected events, and a tenant sending such batches,
 * or many large bodies at once, must not leave the others no room.
 */
export class DerivedBytes {
  private readonly byProject = new Map<string, number>();
  /** The sum of byProject. */
  private total = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly shareOfBudget = 0.25,
  ) {}

  private get share(): number {
    return this.budget.maxBytes * this.shareOfBudget;
  }

  /** Whether the project may start on a body of `declared` bytes: false when it holds its share already. */
  roomFor(projectId: string, declared = 0): boolean {
    const held = this.byProject.get(projectId) ?? 0;
    return held === 0 || held + declared <= this.share;
  }

  /** A body the HTTP front holds already, counted against the project's share only. */
  holdBody(projectId: string, n: number): void {
    if (n <= 0) return; // an empty body holds nothing (an entry of 0 would count the project as holding)
    this.byProject.set(projectId, (this.byProject.get(projectId) ?? 0) + n);
    this.total += n;
  }

  releaseBody(projectId: string, n: number): void {
    this.forget(projectId, n);
  }

  /** What a request derived from its body: counted against the project's share and the global budget. */
  take(projectId: string, n: number): boolean {
    if (n <= 0) return true;
    const held = this.byProject.get(projectId) ?? 0;
    if (held > 0 && held + n > this.share) return false;
    if (!this.budget.take(n)) return false;
    this.byProject.set(projectId, held + n);
    this.total += n;
    return true;
  }

  release(projectId: string, n: number): void {
    this.budget.release(n);
    this.forget(projectId, n);
  }

  /**
   * Whether the project holds at least an equal share of what all projects hold: while the service is behind, its
   * new requests are the ones shed, and a tenant holding less than that (its neighbour) is still let in.
   */
  holdsShare(projectId: string): boolean {
    const held = this.byProject.get(projectId) ?? 0;
    return held > 0 && held * this.byProject.size >= this.total;
  }

  private forget(projectId: string, n: number): void {
    const before = this.byProject.get(projectId) ?? 0;
    const left = before - n;
    this.total -= Math.min(before, n);
    if (left > 0) this.byProject.set(projectId, left);
    else this.byProject.delete(projectId);
  }
}
