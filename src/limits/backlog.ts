// The requests let in and not yet answered, and the arrivals, counted in ticks of TICK_MS: whether arrivals outpace
// completions. A closed-loop client (autocannon, a fleet of mini-apps each waiting for its answer) never holds more
// requests than it has connections: its backlog steps up as it starts, then stays. An open-loop one (arrivals that do
// not wait for answers) past what the service gets through makes the backlog grow window after window. Averages, not
// samples: a commit answers hundreds of requests at once and their clients send again within a millisecond, a dip no
// average sees; and windows of two ticks, so that a load generator running late, then sending what was due at once,
// does not break a run of growth.
const TICK_MS = 50;
/** What a window must add to the one before to count as growth: noise in a steady backlog stays under both. */
const RISE_MIN = 4;
const RISE_FRACTION = 0.03;
/** Ticks kept: enough for the longest run of growth asked about. */
const KEPT = 16;

export class Backlog {
  /** Requests let in and not yet answered. */
  size = 0;
  private area = 0;
  private arrivals = 0;
  private lastChange: number;
  private tickStart: number;
  /** Of the last completed ticks, newest last: the average backlog, and the arrivals (let in or not). */
  private readonly averages: number[] = [];
  private readonly arrived: number[] = [];

  constructor(now: number) {
    this.lastChange = now;
    this.tickStart = now;
  }

  /** A request arrived, whether it is let in or not. */
  arrival(now: number): void {
    this.roll(now);
    this.arrivals++;
  }

  admitted(now: number): void {
    this.roll(now);
    this.size++;
  }

  answered(now: number): void {
    this.roll(now);
    this.size--;
  }

  /**
   * Whether the backlog grew for `windows` windows of two ticks in a row, not in one step: each held more on average
   * than the one before by RISE_MIN requests and RISE_FRACTION of it, and the last a quarter more than the first (and
   * 16 requests).
   */
  growing(now: number, windows: number): boolean {
    this.roll(now);
    const a = this.averages;
    if (a.length < 2 * (windows + 1)) return false;
    const windowAt = (k: number) => (a[a.length - 1 - 2 * k]! + a[a.length - 2 - 2 * k]!) / 2;
    for (let k = 0; k < windows; k++) {
      const before = windowAt(k + 1);
      if (windowAt(k) - before < Math.max(RISE_MIN, before * RISE_FRACTION)) return false;
    }
    return windowAt(0) >= 1.25 * windowAt(windows) + 16;
  }

  /** Arrivals a millisecond over the last `ticks` completed ticks (and the one under way). */
  arrivalRate(now: number, ticks: number): number {
    this.roll(now);
    const n = Math.min(ticks, this.arrived.length);
    let sum = this.arrivals;
    for (let i = this.arrived.length - n; i < this.arrived.length; i++) sum += this.arrived[i]!;
    return sum / Math.max(1, n * TICK_MS + (now - this.tickStart));
  }

  /** Closes the ticks that ended by `now`; a quiet stretch closes as ticks of the backlog it held and no arrival. */
  private roll(now: number): void {
    const end = this.tickStart + TICK_MS;
    if (now < end) {
      this.area += this.size * (now - this.lastChange);
      this.lastChange = now;
      return;
    }
    this.area += this.size * (end - this.lastChange);
    this.push(this.area / TICK_MS, this.arrivals);
    // Whole ticks without an event held `size` throughout (at most KEPT of them matter).
    const whole = Math.floor((now - end) / TICK_MS);
    for (let i = 0; i < Math.min(KEPT, whole); i++) this.push(this.size, 0);
    this.tickStart = end + whole * TICK_MS;
    this.area = this.size * (now - this.tickStart);
    this.arrivals = 0;
    this.lastChange = now;
  }

  private push(average: number, arrivals: number): void {
    this.averages.push(average);
    this.arrived.push(arrivals);
    if (this.averages.length > KEPT) {
      this.averages.shift();
      this.arrived.shift();
    }
  }
}
