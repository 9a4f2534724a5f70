// The aggregator's long loops on the main thread (grouping a window's summaries, its users) run in turns of 5 ms:
// tens of thousands of users take tens of milliseconds, and requests would wait meanwhile, and be shed by the loop's
// delay. Between turns the sockets are read.
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
