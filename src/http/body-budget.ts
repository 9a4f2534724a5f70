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
