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
 * What requests derive from their bodies (a decompressed body, its rows, its quarantine copies)
 * counts against the same budget, and one project may hold at most a quarter of it: 57 KiB of gzip
 * can carry 30 MiB of rejected events, and a tenant sending such batches must not leave the others
 * no room.
 */
export class DerivedBytes {
  private readonly byProject = new Map<string, number>();

  constructor(private readonly budget: BodyBudget, private readonly shareOfBudget = 0.25) {}

  /** False when the project already holds its share: its next request is refused before any work on it. */
  roomFor(projectId: string): boolean {
    return (this.byProject.get(projectId) ?? 0) < this.budget.maxBytes * this.shareOfBudget;
  }

  take(projectId: string, n: number): boolean {
    const held = this.byProject.get(projectId) ?? 0;
    if (held > 0 && held + n > this.budget.maxBytes * this.shareOfBudget) return false;
    if (!this.budget.take(n)) return false;
    this.byProject.set(projectId, held + n);
    return true;
  }

  release(projectId: string, n: number): void {
    this.budget.release(n);
    const left = (this.byProject.get(projectId) ?? 0) - n;
    if (left > 0) this.byProject.set(projectId, left);
    else this.byProject.delete(projectId);
  }
}
