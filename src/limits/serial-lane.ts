// Work that runs one at a time behind a bounded queue: what is let past a budget (a credential lookup for an address
// that spent its failed-authentication budget) costs the shared database at most one query at a time, however many
// addresses ask.
import { HttpError } from '../errors.js';

export class SerialLane {
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  /** Work started so far (read by the metrics). */
  started = 0;

  /** `max`: work held at once (running or waiting), past which more is answered 503 `overloaded` (0: none is taken). */
  constructor(private readonly max: number) {}

  /** Work waiting or running. */
  get size(): number {
    return this.queued;
  }

  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.queued >= this.max) return Promise.reject(overloaded());
    this.queued++;
    const result = this.tail.then(() => {
      this.started++;
      return work();
    });
    const done = result.finally(() => {
      this.queued--;
    });
    this.tail = done.catch(() => undefined);
    return done;
  }
}

function overloaded(): HttpError {
  return new HttpError('overloaded', {
    message: 'Too many credential lookups are waiting for their turn; retry after the delay in Retry-After.',
    retryAfterS: 1,
  });
}
