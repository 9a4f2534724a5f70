// Work that runs one at a time behind a bounded queue: what is let past a budget (a credential lookup for an address
// that spent its failed-authentication budget) costs the shared database at most one query at a time, however many
// addresses ask, and no one of them holds more than its share of the queue.
export class SerialLane {
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  /** Work held (waiting or running) per key; none kept at 0. */
  private readonly byKey = new Map<string, number>();
  /** Work started so far (read by the metrics). */
  started = 0;

  /**
   * `max`: work held at once (running or waiting), and `perKey` of it by one key (an address), past which `full()` is
   * thrown (`max` 0: none is taken).
   */
  constructor(
    private readonly max: number,
    private readonly perKey: number,
    private readonly full: () => Error,
  ) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const mine = this.byKey.get(key) ?? 0;
    if (this.queued >= this.max || mine >= this.perKey) return Promise.reject(this.full());
    this.queued++;
    this.byKey.set(key, mine + 1);
    const result = this.tail.then(() => {
      this.started++;
      return work();
    });
    const done = result.finally(() => {
      this.queued--;
      const left = (this.byKey.get(key) ?? 1) - 1;
      if (left > 0) this.byKey.set(key, left);
      else this.byKey.delete(key);
    });
    this.tail = done.catch(() => undefined);
    return done;
  }
}
