// Work the main thread does for a request's body (parsing and normalizing a small batch, ~0.1 ms) waits its turn
// here and runs in slices of SLICE_MS, between which the event loop reads its sockets. Run as each body arrived, a
// turn of the loop under a spike held hundreds of bodies' work, and everything else waited behind it: the answers of
// commits, /readyz, and the refusals load shedding makes to spare the service that very work. Sliced, those go out
// within a slice; what waits is the work itself, in a queue whose age load shedding reads (src/limits/shedding.ts).
// In make bench's overload, shed answers timed from when the request was written: p50 27-30 -> 7-8 ms, p99 62-113 ->
// 36-50 ms. Bodies of known senders are bounded by the body budget (MAX_INFLIGHT_BODY_BYTES) and the rate limits; those
// read before their sender is known, by INITDATA_VERIFY_QUEUE, as the worker pool's lane for the same work.
import { Fifo } from '../cache/fifo.js';
import { PoolOverloaded } from './errors.js';

const SLICE_MS = 2;
/** While both wait, work before authentication gets at most this share of the main thread's time: served, not first. */
const UNKNOWN_SHARE = 0.25;
/**
 * Work before authentication waiting longer is refused, here and in the worker pool's lane (503): its client has likely
 * given up.
 */
export const UNAUTHENTICATED_MAX_WAIT_MS = 3000;

interface Job {
  work: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  queuedAt: number;
}

export class InlineQueue {
  /** Bodies of a sender already known (bot_api after its key; webapp after its initData). */
  private readonly known = new Fifo<Job>();
  /** Bodies read before their sender is known (a webapp body's envelope): nobody answers for this work. */
  private readonly unknown = new Fifo<Job>();
  /** Time (ms) spent on each queue since both last waited together: the share is of time, not of jobs. */
  private spentKnown = 0;
  private spentUnknown = 0;
  private scheduled = false;

  /**
   * `maxUnknown`: bodies before authentication waiting at once; past it, PoolOverloaded (503). An unauthenticated flood
   * fills that queue alone, gets at most UNKNOWN_SHARE of the time while known senders' bodies wait, and is not in
   * waitMs, so it neither holds a tenant's bodies up much nor gets a tenant shed.
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

  /** Bodies read before their sender is known, waiting. */
  get unknownLength(): number {
    return this.unknown.length;
  }

  /**
   * The queue to serve next (`now`: the clock's last reading): known senders', unless none waits or work before
   * authentication is under its share.
   */
  private nextQueue(now: number): Fifo<Job> | null {
    const { known, unknown } = this;
    for (;;) {
      if (known.length === 0 || unknown.length === 0) {
        this.spentKnown = 0;
        this.spentUnknown = 0;
      }
      if (
        unknown.length > 0 &&
        (known.length === 0 || this.spentUnknown < UNKNOWN_SHARE * (this.spentKnown + this.spentUnknown))
      ) {
        if (now - unknown.first!.queuedAt <= UNAUTHENTICATED_MAX_WAIT_MS) return unknown;
        unknown.shift().reject(new PoolOverloaded());
        continue;
      }
      return known.length > 0 ? known : null;
    }
  }

  private readonly drain = (): void => {
    let at = this.now();
    const until = at + SLICE_MS;
    for (let queue = this.nextQueue(at); queue !== null; queue = this.nextQueue(at)) {
      const job = queue.shift();
      try {
        job.resolve(job.work());
      } catch (err) {
        job.reject(err);
      }
      // One clock reading a job: where this one ended, the next begins.
      const ended = this.now();
      if (queue === this.known) this.spentKnown += ended - at;
      else this.spentUnknown += ended - at;
      at = ended;
      if (ended >= until) break;
    }
    if (this.known.length + this.unknown.length > 0) setImmediate(this.drain);
    else this.scheduled = false;
  };
}
