// Answers to clients that are past their failed-authentication budget leave late. Flood tools, like
// most clients, wait for an answer before they send again, so a connection held for the delay sends
// one request per delay instead of thousands a second, and the refusals stop taking CPU from valid
// traffic. Bounded: past `max` answers held at once (a client that sends without waiting), answers
// leave at once, as they did without the tarpit.

export interface TarpitOptions {
  delayMs: number;
  max: number;
}

export class Tarpit {
  /** Sends in the order held; every entry waits the same delay, so the head is always due first. */
  private queue: { due: number; send: () => void }[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;
  private open = true;

  constructor(
    private readonly opts: TarpitOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Answers held now. */
  get held(): number {
    return this.queue.length - this.head;
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
    const next = this.queue[this.head];
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
    while (this.head < this.queue.length && this.queue[this.head]!.due <= until) {
      const { send } = this.queue[this.head]!;
      this.head++;
      try {
        send();
      } catch {
        // One failed answer (a connection gone) must not keep the others waiting.
      }
    }
    // Drop the sent entries once they are most of the array, so memory follows what is held.
    if (this.head === this.queue.length || (this.head > 1024 && this.head * 2 > this.queue.length)) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
