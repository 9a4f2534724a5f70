// Load shedding at the door. When more arrives than the service gets through, requests queue (in the
// writer for the database, in their sockets for the event loop) and every one of them waits longer:
// answered late, or not before its client gives up. The signal is that queue delay, measured: the age
// of the oldest request the writer holds (waiting or committing) plus how late the event loop runs.
// It rises for every way of falling behind (more traffic, a slow disk, a checkpoint, a failover) and
// needs no tuning to the machine, unlike a count of connections or of requests in flight. (The loop's
// part counts only while the writer holds requests, and judges only requests of a known project; the
// bound is BATCH_MAX_WAIT_MS, which a queued request waits by design, plus SHED_QUEUE_DELAY_MS:
// src/app/wiring.ts.) While it is past the bound, ingestion requests are answered 503 with Retry-After
// from the HTTP front before anything of them is read, a small fraction of what accepting one costs,
// so the requests let in keep their latency and the process its memory.
//
// As in CoDel, a moment over the bound is not overload: shedding starts once requests arriving over
// ENTER_MS have all found the delay over the bound, and stops as soon as one finds it back under;
// within REENTER_MS of stopping it starts again at once, since the backlog that caused it is likely
// still there. Who is shed: a project known from memory that holds less than an equal share of the
// request data in hand is let in even then, so that one tenant's backlog (heavy batches, a commit
// redone) sheds that tenant first, not its neighbours.
import { HttpError } from '../errors.js';

const ENTER_MS = 100;
const REENTER_MS = 1000;

const REFUSAL = new HttpError('overloaded', {
  message:
    'The service is behind: requests are waiting too long. Nothing of this request was read; retry after the delay in Retry-After.',
  retryAfterS: 1,
});

export class LoadShedder {
  private shedding = false;
  /** When an arrival first found the delay over the bound (null: the last one found it under). */
  private overSince: number | null = null;
  private stoppedAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** In ms: the writer's queue delay (the oldest request it holds, waiting or committing). */
    private readonly writerDelayMs: () => number,
    /** In ms: how late the event loop runs. */
    private readonly loopDelayMs: () => number,
    private readonly maxDelayMs: number,
    /** Whether a project holds at least an equal share of the request data in hand. */
    private readonly holdsShare: (projectId: string) => boolean = () => true,
    private readonly onShed?: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The answer for a request arriving now while the service is behind; null when it is let in. `projectId`, when
   * known from memory: a project holding less than an equal share of what is in hand is let in even then, so that one
   * tenant's backlog sheds that tenant first and not its neighbours. A request whose project is not known (a webapp
   * body not yet read, a key not in memory) is shed only while the writer alone is past the bound: the loop's delay
   * may come from work nobody is accountable for (a flood of unauthenticated bodies), and must not let that work turn
   * genuine requests away.
   */
  refusal(projectId: string | null = null): HttpError | null {
    const now = this.now();
    const writer = this.writerDelayMs();
    // The loop's delay counts while there is work in hand: late with none, the machine is busy with something else,
    // and shedding would spare nobody anything.
    if (writer === 0 || writer + this.loopDelayMs() <= this.maxDelayMs) {
      this.overSince = null;
      if (this.shedding) {
        this.shedding = false;
        this.stoppedAt = now;
      }
      return null;
    }
    this.overSince ??= now;
    if (!this.shedding && (now - this.overSince >= ENTER_MS || now - this.stoppedAt < REENTER_MS)) this.shedding = true;
    if (!this.shedding) return null;
    if (projectId !== null ? !this.holdsShare(projectId) : writer <= this.maxDelayMs) return null;
    this.onShed?.();
    return REFUSAL;
  }
}
