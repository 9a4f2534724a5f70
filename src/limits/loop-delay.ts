// How late the event loop runs: the time a request that arrives now waits, in its socket, before the
// process even reads it. A timer due every 10 ms measures it; the figure is the worst of the samples
// taken in the last WINDOW_MS, or how late the timer is already if that is more. (Smoothed over ~50 ms
// instead, it let more through late: in make bench's overload, with the build that started shedding
// 100 ms past the bound, 202s at p99 219–233 ms and shed answers at 84–102 ms, against 145–169 ms
// and 67–71 ms with the worst, alternated in one sitting.) The window is shorter than the 100 ms
// shedding waits before it starts, so one stall alone cannot start it.
const EVERY_MS = 10;
const WINDOW_MS = 90;
const SAMPLES = 16;

export class LoopDelay {
  private readonly recent = new Float64Array(SAMPLES);
  /** When each sample was taken. */
  private readonly takenAt = new Float64Array(SAMPLES);
  private at = 0;
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => {
      const now = performance.now();
      this.recent[this.at] = Math.max(0, now - this.last - EVERY_MS);
      this.takenAt[this.at] = now;
      this.at = (this.at + 1) % SAMPLES;
      this.last = now;
    }, EVERY_MS);
    this.timer.unref();
  }

  /** In ms. */
  get ms(): number {
    const now = performance.now();
    let worst = Math.max(0, now - this.last - EVERY_MS);
    for (let i = 0; i < SAMPLES; i++)
      if (now - this.takenAt[i]! <= WINDOW_MS && this.recent[i]! > worst) worst = this.recent[i]!;
    return worst;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
