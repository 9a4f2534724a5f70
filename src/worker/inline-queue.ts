// Work the main thread does for a request's body (parsing and normalizing a small batch, ~0.1 ms) waits its turn
// here and runs in slices of SLICE_MS, between which the event loop reads its sockets. Run as each body arrived, a
// turn of the loop under a spike held hundreds of bodies' work, and everything else waited behind it: the answers of
// commits, /readyz, and the refusals load shedding makes to spare the service that very work. Sliced, those go out
// within a slice; what waits is the work itself, in a queue whose age load shedding reads (src/limits/shedding.ts).
// In make bench's overload, shed answers timed from when the request was written: p50 27 -> 7 ms, p99 62-113 -> 36-57
// ms. The queue holds only bodies already read, which the body budget bounds (MAX_INFLIGHT_BODY_BYTES).
const SLICE_MS = 2;

interface Job {
  work: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  queuedAt: number;
}

export class InlineQueue {
  private jobs: Job[] = [];
  private head = 0;
  private scheduled = false;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** `work()` in its turn. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ work, resolve: resolve as (v: unknown) => void, reject, queuedAt: this.now() });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.drain);
      }
    });
  }

  /** In ms: how long the oldest job waiting has waited (0 when none). */
  get waitMs(): number {
    const oldest = this.jobs[this.head];
    return oldest === undefined ? 0 : this.now() - oldest.queuedAt;
  }

  get length(): number {
    return this.jobs.length - this.head;
  }

  private readonly drain = (): void => {
    const until = this.now() + SLICE_MS;
    do {
      const job = this.jobs[this.head]!;
      this.jobs[this.head++] = undefined as unknown as Job;
      try {
        job.resolve(job.work());
      } catch (err) {
        job.reject(err);
      }
    } while (this.head < this.jobs.length && this.now() < until);
    if (this.head === this.jobs.length) {
      this.jobs = [];
      this.head = 0;
      this.scheduled = false;
    } else {
      if (this.head > 1024 && this.head * 2 > this.jobs.length) {
        this.jobs = this.jobs.slice(this.head);
        this.head = 0;
      }
      setImmediate(this.drain);
    }
  };
}
