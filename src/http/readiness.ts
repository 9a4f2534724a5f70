// The state /readyz reports, read from the database once a second by a timer of its own: probes
// (or a flood of them) cost the database nothing, and the answer is never older than about a
// second. A check that throws, or has not answered within a second, reads as database_unreachable.
export type ReadyState = 'ready' | 'migrations_pending' | 'database_unreachable';

export class Readiness {
  private current: ReadyState = 'database_unreachable';
  private running = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly check: () => Promise<ReadyState>,
    private readonly everyMs = 1000,
  ) {
    this.timer = setInterval(() => void this.refresh(), everyMs);
    this.timer.unref();
  }

  get state(): ReadyState {
    return this.current;
  }

  /** One check at a time: while one hangs (a database that does not answer), none is added beside it. */
  async refresh(): Promise<void> {
    if (this.running) {
      this.current = 'database_unreachable';
      return;
    }
    this.running = true;
    const check = this.check().catch(() => 'database_unreachable' as const);
    void check.finally(() => {
      this.running = false;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ReadyState>((resolve) => {
      timer = setTimeout(() => resolve('database_unreachable'), this.everyMs);
    });
    try {
      this.current = await Promise.race([check, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
