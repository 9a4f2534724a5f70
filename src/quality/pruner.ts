// Keeps the quarantine bounded, by age and by count per project, every QUARANTINE_PRUNE_EVERY_MS.
// Only a project that quarantined since the last prune can have grown past its bound, so the first
// prune after start counts every project and later ones only those (counting the whole
// quarantine costs PostgreSQL ~75 ms per million rows, every time). Projects not yet pruned, because
// another instance held the prune lock or the prune failed, wait for the next one.
import type { Logger } from '../base/log.js';
import type { QualityStore } from './store.js';

export interface PruneOptions {
  maxEvents: number;
  retentionDays: number;
  everyMs: number;
  /** Runs with each prune: the counts of events dropped over QUARANTINE_MAX_BYTES reach the database. */
  flushDropped?: () => Promise<void>;
}

export class QuarantinePruner {
  /** null: every project. */
  private since: Set<string> | null = null;
  private pruning = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: QualityStore,
    private readonly o: PruneOptions,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => this.prune(), o.everyMs);
    this.timer.unref();
  }

  /** After a commit that quarantined events of this project. */
  quarantined(projectId: string): void {
    this.since?.add(projectId);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private prune(): void {
    this.o
      .flushDropped?.()
      .catch((err: unknown) =>
        this.log.warn({ err: (err as Error).message }, 'counting dropped quarantine events failed'),
      );
    if (this.pruning) return;
    this.pruning = true;
    const projects = this.since === null ? null : [...this.since];
    this.since = new Set();
    const again = () => {
      if (projects === null) this.since = null;
      else for (const p of projects) this.since?.add(p);
    };
    this.store
      .prune(this.o.maxEvents, this.o.retentionDays, projects)
      .then(
        (pruned) => {
          if (pruned === null) again();
        },
        (err: unknown) => {
          again();
          this.log.warn({ err: (err as Error).message }, 'pruning the quarantine failed');
        },
      )
      .finally(() => {
        this.pruning = false;
      });
  }
}
