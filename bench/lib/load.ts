// autocannon, driven programmatically with fixed connections and duration.
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  durationS: number;
  body: () => Buffer;
  /** Ends the run early (its figures are of the time it ran). */
  signal?: AbortSignal;
}

export interface LoadResult {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  seconds: number;
  /** Answers by status. */
  statuses: Record<string, number>;
}

export async function load(o: LoadOptions): Promise<LoadResult> {
  const started = performance.now();
  const r = (await new Promise((resolve, reject) => {
    const run = autocannon(
      {
        url: o.url,
        method: 'POST',
        headers: o.headers,
        connections: o.connections,
        duration: o.durationS,
        timeout: 30,
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: o.body() }) }],
      } as never,
      (err: unknown, result: unknown) => (err ? reject(err) : resolve(result)),
    ) as unknown as { stop(): void };
    o.signal?.addEventListener('abort', () => run.stop(), { once: true });
  })) as unknown as {
    '2xx': number;
    non2xx: number;
    errors: number;
    timeouts: number;
    duration: number;
    latency: { p50: number; p99: number; max: number };
    statusCodeStats?: Record<string, { count: number }>;
  };
  const seconds = r.duration || (performance.now() - started) / 1000;
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([s, c]) => [s, c.count]));
  return {
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    rps: r['2xx'] / seconds,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    seconds,
    statuses,
  };
}
