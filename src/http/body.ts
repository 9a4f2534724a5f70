// A request's body as it arrives: held against the size bound and the budget shared by every request, and handed to
// the handler whole. Memory follows the bytes that arrived, never the Content-Length a client declares: a client that
// announces 32 MiB and sends three bytes costs three bytes.
import { HttpError } from '../base/errors.js';
import type { BodyBudget } from '../limits/body-budget.js';

const NO_BODY = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

const BUDGET_SPENT = new HttpError('overloaded', {
  message: 'The service is receiving more request data than it holds at once; retry after the delay in Retry-After.',
  retryAfterS: 1,
});

/** The Content-Length a client declared: null when absent, NaN when not a plain number. */
export function declaredLength(raw: string | undefined): number | null {
  return raw === undefined ? null : /^\d{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
}

export class BodyIntake {
  /** Whole, refused, or cut short: nothing more is taken. */
  done = false;
  /** Refused before its end: what still streams in is dropped (closeAfterCut says what becomes of the rest). */
  cut = false;
  readonly body: Promise<Buffer>;
  // Set by the promise's executor, which runs at once.
  private resolve!: (b: Buffer) => void;
  private reject!: (e: unknown) => void;
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes held against the budget until the request is answered. */
  private held = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly max: number,
    method: string,
    readonly declared: number | null,
    chunked: boolean,
  ) {
    this.body = new Promise<Buffer>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.body.catch(() => undefined);
    if (declared !== null && declared > max) this.refuse(this.tooLarge());
    else if (NO_BODY.has(method) || declared === 0 || (declared === null && !chunked)) {
      // No body follows (or none is read): uWS would never call onData.
      this.done = true;
      this.resolve(Buffer.alloc(0));
    }
  }

  /** A chunk from uWS, valid only during the call. */
  take(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.done) return;
    const n = chunk.byteLength;
    if (this.size + n > this.max) return void this.refuse(this.tooLarge());
    if (!this.budget.take(n)) return void this.refuse(BUDGET_SPENT);
    this.held += n;
    // uWS neuters the chunk when its callback returns: copied.
    this.chunks.push(Buffer.from(new Uint8Array(chunk)));
    this.size += n;
    if (isLast) {
      this.done = true;
      this.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size));
      this.chunks = [];
    }
  }

  /** Refuses the rest of the body; the handler reading it gets `err`. */
  refuse(err: unknown): void {
    this.done = true;
    this.cut = true;
    this.chunks = [];
    this.reject(err);
  }

  /** The client went away: the handler reading the body gets `err`. */
  abort(err: unknown): void {
    this.reject(err);
  }

  /** Gives back what it held of the budget. */
  release(): void {
    this.budget.release(this.held);
    this.held = 0;
  }

  private tooLarge(): HttpError {
    return new HttpError('payload_too_large', {
      message: `The body exceeds ${this.max} bytes.`,
      details: { maxBytes: this.max },
    });
  }
}
