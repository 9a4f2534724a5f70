// A background job's schedule: the task at start, then again `everyMs` after each run ends (or as soon as the run
// says, when it returns a delay), never two runs at once. A run that fails is counted and the next one comes as
// usual; stop() waits for the run under way.

export class Every {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Runs failed in a row. */
  private failures = 0;

  constructor(
    private readonly everyMs: number,
    private readonly task: () => Promise<number | void>,
    /** After a failed run, with the failures in a row so far. */
    private readonly failed: (err: unknown, failures: number) => void,
  ) {}

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      let next = this.everyMs;
      this.running = this.task()
        .then((ms) => {
          this.failures = 0;
          if (typeof ms === 'number') next = ms;
        })
        .catch((err: unknown) => this.failed(err, ++this.failures))
        .finally(() => {
          this.running = null;
          this.schedule(next);
        });
    }, ms);
    this.timer.unref();
  }
}
