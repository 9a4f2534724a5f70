// Clients that send batches continuously, as a careful user of the API would: every batch that
// does not get a 202 is kept and sent again later with the same eventIds.
import { serverEvent } from '../helpers/api.js';

export interface Batch {
  events: Record<string, unknown>[];
}

export interface TrafficOptions {
  clients: number;
  eventsPerBatch: number;
  timeoutMs: number;
  path?: string;
}

export class Traffic {
  readonly sent = new Set<string>();
  readonly acked = new Set<string>();
  readonly statuses = new Map<string, number>();
  /** Non-202 answers that lacked a Retry-After although the spec says to retry them. */
  missingRetryAfter = 0;
  pending: Batch[] = [];
  /** The last refusal's body, for a failure message. */
  lastRefusal = '';
  inflight = 0;
  maxLatencyMs = 0;
  /** When each acknowledgement arrived (performance.now()). */
  readonly ackedAt: number[] = [];
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly url: () => string,
    private readonly token: string,
    private readonly opts: TrafficOptions,
  ) {}

  private newBatch(): Batch {
    const events = Array.from({ length: this.opts.eventsPerBatch }, () => serverEvent());
    for (const e of events) this.sent.add(e.eventId as string);
    return { events };
  }

  private count(key: string): void {
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
  }

  /** Sends one batch; true when it was acknowledged. */
  async send(batch: Batch): Promise<boolean> {
    this.inflight++;
    const started = performance.now();
    try {
      const res = await fetch(`${this.url()}${this.opts.path ?? '/tg'}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': this.token },
        body: JSON.stringify({ events: batch.events }),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      const text = await res.text();
      this.count(String(res.status));
      if (res.status !== 202) this.lastRefusal = `${res.status} ${text}`;
      if (res.status === 202) {
        this.ackedAt.push(performance.now());
        for (const e of batch.events) this.acked.add(e.eventId as string);
        return true;
      }
      if ((res.status === 503 || res.status === 429) && res.headers.get('retry-after') === null)
        this.missingRetryAfter++;
      if (res.status !== 503 && res.status !== 429) throw new Error(`unexpected status ${res.status}`);
      return false;
    } catch (err) {
      if ((err as Error).message?.startsWith('unexpected status')) throw err;
      this.count((err as Error).name === 'TimeoutError' ? 'timeout' : 'network');
      return false;
    } finally {
      this.inflight--;
      this.maxLatencyMs = Math.max(this.maxLatencyMs, performance.now() - started);
    }
  }

  start(): void {
    this.running = true;
    this.loops = Array.from({ length: this.opts.clients }, async () => {
      while (this.running) {
        const batch = this.pending.shift() ?? this.newBatch();
        if (!(await this.send(batch))) {
          this.pending.push(batch);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    });
  }

  /** Stops sending new batches; resolves when every client has finished its current request. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Sends every batch still unacknowledged until each gets its 202. */
  async retryPending(deadlineMs = 20_000): Promise<void> {
    const until = Date.now() + deadlineMs;
    while (this.pending.length > 0) {
      if (Date.now() > until)
        throw new Error(
          `${this.pending.length} batches never acknowledged; last refusal: ${this.lastRefusal}; statuses ${JSON.stringify([...this.statuses])}`,
        );
      const batch = this.pending.shift()!;
      if (!(await this.send(batch))) {
        this.pending.push(batch);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}
