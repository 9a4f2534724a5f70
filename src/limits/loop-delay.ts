// How late the event loop runs: the time a request that arrives now waits, in its socket, before the
// process even reads it. A timer due every 10 ms measures it; the figure is the worst of the last
// ~100 ms, or how late the timer is already if that is more. (Smoothed over ~50 ms instead, it let
// more through late: in make bench's overload, 202s at p99 219–233 ms and shed answers at 84–102 ms,
// against 145–169 ms and 67–71 ms with the worst, alternated in one sitting.)
const EVERY_MS = 10;
const WINDOW = 10;

export class LoopDelay {
  private readonly recent = new Float64Array(WINDOW);
  private at = 0;
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => {
      const now = performance.now();
      this.recent[this.at] = Math.max(0, now - this.last - EVERY_MS);
      this.at = (this.at + 1) % WINDOW;
      this.last = now;
    }, EVERY_MS);
    this.timer.unref();
  }

  /** In ms. */
  get ms(): number {
    let worst = Math.max(0, performance.now() - this.last - EVERY_MS);
    for (const d of this.recent) if (d > worst) worst = d;
    return worst;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
