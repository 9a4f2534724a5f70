// Answers to clients that are past their failed-authentication budget leave late. Flood tools, like
// most clients, wait for an answer before they send again, so a connection held for the delay sends
// one request per delay instead of thousands a second, and the refusals stop taking CPU from valid
// traffic. Bounded: past `max` answers held at once (a client that sends without waiting), answers
// leave at once, as they did without the tarpit.
import { Fifo } from '../cache/fifo.js';

export interface TarpitOptions {
  delayMs: number;
  max: number;
}

export class Tarpit {
  /** Sends in the order held; every entry waits the same delay, so the head is always due first. */
  private readonly queue = new Fifo<{ due: number; send: () => void }>();
  private timer: NodeJS.Timeout | null = null;
  private open = true;

  constructor(
    private readonly opts: TarpitOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Answers held now. */
  get held(): number {
    return this.queue.length;
  }

  /** Runs `send` after the delay, or at once when the tarpit is off, full or released. */
  hold(send: () => void): void {
    if (!this.open || this.opts.delayMs <= 0 || this.held >= this.opts.max) {
      send();
      return;
    }
    this.queue.push({ due: this.now() + this.opts.delayMs, send });
    if (this.timer === null) this.schedule();
  }

  /** Sends everything held and holds nothing more (shutting down). */
  release(): void {
    this.open = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.flush(Number.POSITIVE_INFINITY);
  }

  private schedule(): void {
    const next = this.queue.first;
    if (next === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.flush(this.now());
        this.schedule();
      },
      Math.max(0, next.due - this.now()),
    );
  }

  private flush(until: number): void {
    while (this.queue.length > 0 && this.queue.first!.due <= until) {
      const { send } = this.queue.shift();
      try {
        send();
      } catch {
        // One failed answer (a connection gone) must not keep the others waiting.
      }
    }
  }
}
