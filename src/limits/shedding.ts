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
// bound is BATCH_MAX_WAIT_MS, which a queued request waits by design, plus SHED_QUEUE_DELAY_MS: src/wings/ingestion/wing.ts.)
// While it is past the bound, ingestion requests are answered 503 with Retry-After from the HTTP front before
// anything of them is read, a small fraction of what accepting one costs, so the requests let in keep their latency
// and the process its memory.
//
// Shedding exists to keep a backlog from growing without bound, and a backlog its clients bound themselves is not
// that: a closed-loop client (autocannon, a fleet of mini-apps each waiting for its answer) never holds more requests
// than it has connections, and a request turned away comes straight back, so shedding it only lowers goodput. So the
// delay over the bound is not enough to start: shedding starts once the requests arriving over ENTER_MS (none QUIET_MS
// apart) have all found the delay over the bound and arrivals have outpaced completions for GROWTH_WINDOWS windows of
// 100 ms in a row (src/limits/backlog.ts), longer than a closed-loop client takes to open its connections. It stops as
// soon as an arrival finds the delay back under the bound, and within REENTER_MS of stopping starts again at once, as
// a CoDel does, while the overload found that way is likely still there; but a shedding that makes arrivals come
// faster than COMEBACK_RATIO times the rate the overload was found at is turning away clients that send again at once:
// it stops, and only growth starts it again. Those rates count bot_api arrivals with a key known from memory only: a
// flood of made-up keys, or of bodies nobody is known to have sent, cannot pass for clients coming back. And whatever
// the growth, requests waiting LONG_WAIT_MS for LONG_WAIT_FOR_MS are shed: no client's connections excuse that.
// Who is shed: a project known from memory that holds less than an equal share of the request data in hand is let in
// even then, so that one tenant's backlog (heavy batches, a commit redone) sheds that tenant first, not its neighbours.
import { HttpError } from '../base/errors.js';
import { Backlog } from './backlog.js';

const ENTER_MS = 100;
const QUIET_MS = 1000;
/** Windows of 100 ms of growth in a row: more than a closed-loop client's connections take to open (performance.md). */
const GROWTH_WINDOWS = 6;
const REENTER_MS = 1000;
/** A shedding this long can tell whether arrivals came faster than COMEBACK_RATIO times those the overload began with. */
const COMEBACK_MS = 50;
const COMEBACK_RATIO = 2;
const LONG_WAIT_MS = 2000;
const LONG_WAIT_FOR_MS = 1000;

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
  private readonly backlog: Backlog;
  /** Arrivals a millisecond when the overload was found by its growth: what shedding it should not raise. */
  private foundRate = 0;
  /** The shedding under way: when it began and what arrived since. */
  private episodeStart = 0;
  private episodeArrivals = 0;
  /** When an arrival first found the delay past LONG_WAIT_MS (null: the last one found it under). */
  private longSince: number | null = null;

  constructor(
    private readonly signals: ShedSignals,
    private readonly maxDelayMs: number,
    private readonly onShed?: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.backlog = new Backlog(this.now());
  }

  /** A request was let in (refusal() answered null, or was not asked while shutting down). */
  admitted(): void {
    this.backlog.admitted(this.now());
  }

  /** A request let in was answered (or its client went away). */
  answered(): void {
    this.backlog.answered(this.now());
  }

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
    const known = keyed && projectId !== null;
    if (known) this.backlog.arrival(now);
    const knownFraction = this.countArrival(now, keyed, known);
    // The loop's delay counts while there is work in hand: late with none, the machine is busy with something else,
    // and shedding would spare nobody anything (and the writer's delay is 0).
    const inHand = this.signals.inHand();
    const queue = inHand ? this.signals.queueDelayMs() : 0;
    const delay = inHand ? queue + this.signals.loopDelayMs() * knownFraction : 0;
    this.longSince = delay < LONG_WAIT_MS ? null : (this.longSince ?? now);
    if (delay <= this.maxDelayMs) {
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
    if (!this.shedding) {
      if (now - this.stoppedAt < REENTER_MS) this.startShedding(now);
      else if (
        now - (this.longSince ?? now) >= LONG_WAIT_FOR_MS ||
        (now - this.overSince >= ENTER_MS && this.backlog.growing(now, GROWTH_WINDOWS))
      ) {
        this.foundRate = this.backlog.arrivalRate(now, 4);
        this.startShedding(now);
      }
    }
    if (!this.shedding) return null;
    const shedFor = now - this.episodeStart;
    if (known) this.episodeArrivals++;
    // A shedding found with no keyed arrivals of a known project (the long wait alone, of webapp or unknown keys) has
    // no rate to be outpaced: one such request later says nothing of clients coming back.
    if (
      this.foundRate > 0 &&
      this.episodeArrivals > COMEBACK_RATIO * this.foundRate * shedFor &&
      shedFor >= COMEBACK_MS
    ) {
      // Turned away, they came straight back: clients that send again at once bound their own backlog.
      this.shedding = false;
      this.stoppedAt = Number.NEGATIVE_INFINITY;
      return null;
    }
    if (projectId !== null ? !this.signals.holdsShare(projectId) : queue <= this.maxDelayMs) return null;
    this.onShed?.();
    return REFUSAL;
  }

  private startShedding(now: number): void {
    this.shedding = true;
    this.episodeStart = now;
    this.episodeArrivals = 0;
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
    if (known) a.known++;
    const all = a.all + a.allBefore;
    return all === 0 ? 1 : (a.known + a.knownBefore) / all;
  }
}
