// Work the main thread does for a request's body (parsing and normalizing a small batch, ~0.1 ms) waits its turn
// here and runs in slices of SLICE_MS, between which the event loop reads its sockets. Run as each body arrived, a
// turn of the loop under a spike held hundreds of bodies' work, and everything else waited behind it: the answers of
// commits, /readyz, and the refusals load shedding makes to spare the service that very work. Sliced, those go out
// within a slice; what waits is the work itself, in a queue whose age load shedding reads (src/limits/shedding.ts).
// In make bench's overload, shed answers timed from when the request was written: p50 27-30 -> 7-8 ms, p99 62-113 ->
// 36-50 ms. Bodies of known senders are bounded by the body budget (MAX_INFLIGHT_BODY_BYTES) and the rate limits; those
// read before their sender is known, by INITDATA_VERIFY_QUEUE, as the worker pool's lane for the same work.
import { PoolOverloaded } from './errors.js';

const SLICE_MS = 2;
/** When both wait, one job in this many is work before authentication: it is served, never starved, never first. */
const UNKNOWN_EVERY = 4;

interface Job {
  work: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  queuedAt: number;
}

/** A FIFO that forgets what it served. */
class Fifo {
  private jobs: (Job | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.jobs.length - this.head;
  }

  get first(): Job | undefined {
    return this.jobs[this.head];
  }

  push(job: Job): void {
    this.jobs.push(job);
  }

  shift(): Job {
    const job = this.jobs[this.head]!;
    this.jobs[this.head++] = undefined;
    if (this.head === this.jobs.length) {
      this.jobs = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.jobs.length) {
      this.jobs = this.jobs.slice(this.head);
      this.head = 0;
    }
    return job;
  }
}

export class InlineQueue {
  /** Bodies of a sender already known (bot_api after its key; webapp after its initData). */
  private readonly known = new Fifo();
  /** Bodies read before their sender is known (a webapp body's envelope): nobody answers for this work. */
  private readonly unknown = new Fifo();
  private turn = 0;
  private scheduled = false;

  /**
   * `maxUnknown`: bodies before authentication waiting at once; past it, PoolOverloaded (503). An unauthenticated flood
   * fills that queue alone, waits behind known senders' bodies (UNKNOWN_EVERY), and is not in waitMs, so it neither
   * delays a tenant much nor gets one shed.
   */
  constructor(
    private readonly maxUnknown: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `work()` in its turn; `known`: whether the sender is known. */
  run<T>(work: () => T, known = true): Promise<T> {
    const queue = known ? this.known : this.unknown;
    if (!known && queue.length >= this.maxUnknown) return Promise.reject(new PoolOverloaded());
    return new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (v: unknown) => void, reject, queuedAt: this.now() });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.drain);
      }
    });
  }

  /** In ms: how long the oldest body of a known sender has waited (0 when none). */
  get waitMs(): number {
    const oldest = this.known.first;
    return oldest === undefined ? 0 : this.now() - oldest.queuedAt;
  }

  /** Bodies of known senders waiting. */
  get length(): number {
    return this.known.length;
  }

  private readonly drain = (): void => {
    const until = this.now() + SLICE_MS;
    do {
      const { known, unknown } = this;
      const job =
        unknown.length > 0 && (known.length === 0 || ++this.turn % UNKNOWN_EVERY === 0)
          ? unknown.shift()
          : known.shift();
      try {
        job.resolve(job.work());
      } catch (err) {
        job.reject(err);
      }
    } while (this.known.length + this.unknown.length > 0 && this.now() < until);
    if (this.known.length + this.unknown.length > 0) setImmediate(this.drain);
    else this.scheduled = false;
  };
}
