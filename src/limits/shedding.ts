// Load shedding at the door. When more arrives than the service gets through, requests queue (in their sockets and
// then the inline queue for the main thread, in the writer for a database connection) and every one of them waits
// longer: answered late, or not before its client gives up. The signal is that queue delay, measured: the longest any
// request the writer holds has waited on something other than its own rows (its wait for a commit to begin, and its
// commit's time beyond its own rows' allowance: a 1000-event batch takes tens of milliseconds to commit on an idle
// database), plus how late the main thread runs (the larger of the event loop's delay and the wait of the oldest body
// queued to be parsed: src/worker/inline-queue.ts). It rises for every way of falling behind (more traffic, a slow
// disk, a checkpoint, a failover) and needs no tuning to the machine, unlike a count of connections or of requests in
// flight.
// (The main thread's part counts only while requests are in hand, and judges only requests of a known project; the
// bound is BATCH_MAX_WAIT_MS, which a queued request waits by design, plus SHED_QUEUE_DELAY_MS: src/app/wiring.ts.)
// While it is past the bound, ingestion requests are answered 503 with Retry-After from the HTTP front before
// anything of them is read, a small fraction of what accepting one costs, so the requests let in keep their latency
// and the process its memory.
//
// As in CoDel, a moment over the bound is not overload: shedding starts once requests arriving over ENTER_MS (none
// QUIET_MS apart) have all found the delay over the bound, and stops as soon as one finds it back under; within
// REENTER_MS of stopping it starts again at once, since the backlog that caused it is likely still there. Who is
// shed: a project known from memory that holds less than an equal share of the request data in hand is let in even
// then, so that one tenant's backlog (heavy batches, a commit redone) sheds that tenant first, not its neighbours.
import { HttpError } from '../errors.js';

const ENTER_MS = 100;
const REENTER_MS = 1000;
const QUIET_MS = 1000;

/**
 * The answer to a request shed: one constant, whose reply the HTTP front builds once (RouteOptions.shed); exported for
 * bench/refusal-server.ts's floor, which writes the same answer.
 */
export const REFUSAL = new HttpError('overloaded', {
  message:
    'The service is behind: requests are waiting too long. Nothing of this request was read; retry after the delay in Retry-After.',
  retryAfterS: 1,
});

interface ShedSignals {
  /** In ms: the writer's queue delay (GroupCommitWriter.queueDelayMs). */
  queueDelayMs(): number;
  /** Whether requests are in hand: bodies waiting to be parsed, or requests the writer holds. */
  inHand(): boolean;
  /** In ms: how late the main thread runs (the larger of the event loop's delay and the inline queue's wait). */
  loopDelayMs(): number;
  /** Whether a project holds at least an equal share of the request data in hand. */
  holdsShare(projectId: string): boolean;
}

export class LoadShedder {
  private shedding = false;
  /** When an arrival first found the delay over the bound (null: the last one found it under). */
  private overSince: number | null = null;
  /** When the last request arrived: what the delay was between two arrivals further apart than QUIET_MS is unknown. */
  private lastArrival = Number.NEGATIVE_INFINITY;
  /** Keyed arrivals, and those of a project known from memory, in this second and the one before (see refusal). */
  private readonly arrivals = { second: 0, all: 0, known: 0, allBefore: 0, knownBefore: 0 };
  private stoppedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly signals: ShedSignals,
    private readonly maxDelayMs: number,
    private readonly onShed?: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The answer for a request arriving now while the service is behind; null when it is let in. `projectId`, when
   * known from memory: a project holding less than an equal share of what is in hand is let in even then, so that one
   * tenant's backlog sheds that tenant first and not its neighbours. A request whose project is not known (a webapp
   * body not yet read, a key not in memory) is shed only while the writer alone is past the bound: the loop's delay
   * may come from work nobody is accountable for (a flood of unauthenticated bodies), and must not let that work turn
   * genuine requests away. For the same reason the loop's delay counts in proportion to the keyed arrivals (bot_api's)
   * of the last second or two that were of a known project: a flood of made-up keys, 4,000 refusals a second beside a
   * tenant's hundred requests, makes the loop late, and shedding that tenant would lighten the loop by nothing. Webapp
   * arrivals, whose project nothing at the door tells, are not `keyed` and do not count either way.
   */
  refusal(projectId: string | null = null, keyed = false): HttpError | null {
    const now = this.now();
    const sinceLast = now - this.lastArrival;
    this.lastArrival = now;
    const knownFraction = this.countArrival(now, keyed, projectId !== null);
    // The loop's delay counts while there is work in hand: late with none, the machine is busy with something else,
    // and shedding would spare nobody anything (and the writer's delay is 0).
    const inHand = this.signals.inHand();
    const queue = inHand ? this.signals.queueDelayMs() : 0;
    if (!inHand || queue + this.signals.loopDelayMs() * knownFraction <= this.maxDelayMs) {
      this.overSince = null;
      if (this.shedding) {
        this.shedding = false;
        this.stoppedAt = now;
      }
      return null;
    }
    // Over the bound for ENTER_MS means arrivals all that while found it over: after a quiet QUIET_MS the clock starts
    // again (two arrivals over the bound seconds apart say nothing of the time between them).
    if (this.overSince === null || sinceLast > QUIET_MS) this.overSince = now;
    if (!this.shedding && (now - this.overSince >= ENTER_MS || now - this.stoppedAt < REENTER_MS)) this.shedding = true;
    if (!this.shedding) return null;
    if (projectId !== null ? !this.signals.holdsShare(projectId) : queue <= this.maxDelayMs) return null;
    this.onShed?.();
    return REFUSAL;
  }

  /** Counts an arrival; returns the fraction of the keyed arrivals of this second and the one before that are known. */
  private countArrival(now: number, keyed: boolean, known: boolean): number {
    const a = this.arrivals;
    const second = Math.floor(now / 1000);
    if (second !== a.second) {
      const adjacent = second === a.second + 1;
      a.allBefore = adjacent ? a.all : 0;
      a.knownBefore = adjacent ? a.known : 0;
      a.all = 0;
      a.known = 0;
      a.second = second;
    }
    if (keyed) a.all++;
    if (keyed && known) a.known++;
    const all = a.all + a.allBefore;
    return all === 0 ? 1 : (a.known + a.knownBefore) / all;
  }
}
