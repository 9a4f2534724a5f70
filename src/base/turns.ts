// Long loops on the main thread (the aggregator grouping a window's summaries and its users, the eraser rewriting
// summaries) run in turns of 5 ms: tens of thousands of items take tens of milliseconds, and requests would wait
// meanwhile, and be shed by the loop's delay. Between turns the sockets are read.
const TURN_MS = 5;

export class Turns {
  private since = performance.now();

  /** Nothing while this turn lasts; past it, a promise resolved once the sockets have been read. */
  take(): Promise<void> | undefined {
    if (performance.now() - this.since <= TURN_MS) return undefined;
    return new Promise((resolve) => {
      setImmediate(() => {
        this.since = performance.now();
        resolve();
      });
    });
  }
}
