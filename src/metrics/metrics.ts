// Prometheus metrics (prom-client). The hot path only touches pre-bound children (no label
// hashing per call); what other modules already count (caches, pool, writer queue) is read at scrape
// time, so a process nobody scrapes pays for almost nothing. Process and Node.js metrics carry
// their standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, …).
import client from 'prom-client';
import { type Endpoint, ENDPOINTS, ROUTE_GROUPS, type RouteGroup } from '../base/endpoints.js';
import { DIAGNOSTICS, type DiagnosticCounts, PLAN_CODES } from '../pipeline/diagnostics.js';

export type Outcome = 'accepted' | 'rejected' | 'duplicated' | 'stored' | 'stored_not_billed' | 'redelivered';
const OUTCOMES: readonly Outcome[] = [
  'accepted',
  'rejected',
  'duplicated',
  'stored',
  'stored_not_billed',
  'redelivered',
];

export interface CacheCounts {
  hits: number;
  misses: number;
}

/** Read at scrape time. */
export interface Probes {
  poolQueue(): number;
  poolUtilization(): number;
  writerPending(): number;
  writerQueuedRows(): number;
  /** The writer's queue delay (ms): GroupCommitWriter.queueDelayMs. */
  writerQueueDelayMs(): number;
  /** How long the oldest body waiting for the main thread's turn has waited (ms): InlineQueue.waitMs. */
  inlineQueueWaitMs(): number;
  bodyBytes(): number;
  heldAnswers(): number;
  liveViewers(): number;
  caches(): Record<string, CacheCounts>;
  /** Pipeline tasks run so far, keyed "kind:where" (where: inline or pool). */
  tasks(): Map<string, number>;
  /** Work before authentication waiting: for the worker pool's lane, or to be parsed on the main thread. */
  unauthenticatedWaiting(): number;
  /** Rejected events not kept because their project's quarantine was full, since start. */
  quarantineDropped(): number;
  /** API keys looked up past their address's failed-authentication budget, since start. */
  lowPriorityLookups(): number;
}

const SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
const ROW_BUCKETS = [10, 50, 100, 250, 500, 1000, 2000, 4000, 8000];
const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type CommitPath = 'copy' | 'staging';
export type DbErrorKind = 'unavailable' | 'refused' | 'retry';

export class Metrics {
  readonly registry = new client.Registry();
  private readonly requests: client.Counter<'endpoint' | 'status'>;
  private readonly requestChildren = new Map<string, client.Counter.Internal>();
  private readonly durations: Record<RouteGroup, client.Histogram.Internal<'endpoint'>>;
  private readonly events: Record<Endpoint, Record<Outcome, client.Counter.Internal>>;
  private readonly diagnostics: Record<string, client.Counter.Internal>;
  private readonly batchSize: Record<Endpoint, client.Histogram.Internal<'endpoint'>>;
  private readonly commitRows: client.Histogram<'path'>;
  private readonly commitSeconds: client.Histogram<'path'>;
  private readonly rateLimited: Record<Endpoint, client.Counter.Internal>;
  private readonly authLimited: Record<RouteGroup, client.Counter.Internal>;
  private readonly redeliveries: client.Counter;
  private readonly quarantined: client.Counter<'code'>;
  private readonly replayed: client.Counter<'outcome'>;
  private readonly dbErrors: client.Counter<'kind'>;
  private readonly shedRequests: client.Counter;

  constructor(probes: Probes) {
    const r = this.registry;
    client.collectDefaultMetrics({ register: r });
    this.requests = new client.Counter({
      name: 'tg_ingest_http_requests_total',
      help: 'HTTP requests answered, by endpoint and status.',
      labelNames: ['endpoint', 'status'],
      registers: [r],
    });
    const duration = new client.Histogram({
      name: 'tg_ingest_http_request_duration_seconds',
      help: 'Time from request to reply, by endpoint.',
      labelNames: ['endpoint'],
      buckets: SECONDS,
      registers: [r],
    });
    this.durations = Object.fromEntries(ROUTE_GROUPS.map((e) => [e, duration.labels(e)])) as never;
    const events = new client.Counter({
      name: 'tg_ingest_events_total',
      help: 'Events by endpoint and outcome: accepted, rejected, duplicated (within a request), stored, stored_not_billed, redelivered.',
      labelNames: ['endpoint', 'outcome'],
      registers: [r],
    });
    this.events = Object.fromEntries(
      ENDPOINTS.map((e) => [e, Object.fromEntries(OUTCOMES.map((o) => [o, events.labels(e, o)]))]),
    ) as never;
    const diag = new client.Counter({
      name: 'tg_ingest_diagnostics_total',
      help: 'Diagnostics by code and severity (an error rejects an event).',
      labelNames: ['code', 'severity'],
      registers: [r],
    });
    this.diagnostics = Object.fromEntries(
      Object.entries(DIAGNOSTICS).flatMap(([code, d]) =>
        (PLAN_CODES.has(code as keyof typeof DIAGNOSTICS) ? (['warning', 'error'] as const) : [d.severity]).map(
          (sev) => [`${code}/${sev}`, diag.labels(code, sev)],
        ),
      ),
    );
    const size = new client.Histogram({
      name: 'tg_ingest_batch_events',
      help: 'Events per request.',
      labelNames: ['endpoint'],
      buckets: SIZE_BUCKETS,
      registers: [r],
    });
    this.batchSize = Object.fromEntries(ENDPOINTS.map((e) => [e, size.labels(e)])) as never;
    this.commitRows = new client.Histogram({
      name: 'tg_ingest_commit_rows',
      help: 'Rows per group commit, by path (copy: straight COPY; staging: the batch met stored rows).',
      labelNames: ['path'],
      buckets: ROW_BUCKETS,
      registers: [r],
    });
    this.commitSeconds = new client.Histogram({
      name: 'tg_ingest_commit_duration_seconds',
      help: 'Duration of a group commit, by path.',
      labelNames: ['path'],
      buckets: SECONDS,
      registers: [r],
    });
    const limited = new client.Counter({
      name: 'tg_ingest_rate_limited_total',
      help: 'Requests refused with 429 rate_limited, by endpoint.',
      labelNames: ['endpoint'],
      registers: [r],
    });
    this.rateLimited = Object.fromEntries(ENDPOINTS.map((e) => [e, limited.labels(e)])) as never;
    const authLimited = new client.Counter({
      name: 'tg_ingest_auth_rate_limited_total',
      help: 'Requests refused with 429 auth_rate_limited after too many failed authentications, by endpoint.',
      labelNames: ['endpoint'],
      registers: [r],
    });
    this.authLimited = Object.fromEntries(ROUTE_GROUPS.map((e) => [e, authLimited.labels(e)])) as never;
    this.redeliveries = new client.Counter({
      name: 'tg_ingest_commit_redeliveries_total',
      help: 'Group commits that met events already stored (a client resent them) and were committed again through staging.',
      registers: [r],
    });
    this.quarantined = new client.Counter({
      name: 'tg_ingest_quarantined_events_total',
      help: 'Events put in quarantine, by error code (an event with several codes counts under each).',
      labelNames: ['code'],
      registers: [r],
    });
    this.replayed = new client.Counter({
      name: 'tg_ingest_replayed_events_total',
      help: 'Quarantined events replayed, by outcome: accepted, still_rejected, duplicated.',
      labelNames: ['outcome'],
      registers: [r],
    });
    this.dbErrors = new client.Counter({
      name: 'tg_ingest_db_errors_total',
      help: 'Failed group commits by kind: unavailable (the database: the writer backs off), refused (data the database would not store: the batch is split), retry (deadlock or serialization, retried).',
      labelNames: ['kind'],
      registers: [r],
    });
    this.shedRequests = new client.Counter({
      name: 'tg_ingest_shed_requests_total',
      help: 'Ingestion requests answered 503 overloaded before their body was read, while the service was behind (SHED_QUEUE_DELAY_MS).',
      registers: [r],
    });

    new client.Gauge({
      name: 'tg_ingest_pool_queue_size',
      help: 'Tasks waiting for a worker.',
      registers: [r],
      collect() {
        this.set(probes.poolQueue());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_pool_utilization',
      help: 'Share of time the workers were busy since start (0-1).',
      registers: [r],
      collect() {
        this.set(probes.poolUtilization());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_writer_pending_requests',
      help: 'Requests queued or committing in the writer.',
      registers: [r],
      collect() {
        this.set(probes.writerPending());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_writer_queued_rows',
      help: 'Rows held by the writer (queued or committing); bounded by WRITER_MAX_QUEUED_ROWS.',
      registers: [r],
      collect() {
        this.set(probes.writerQueuedRows());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_writer_queue_delay_seconds',
      help: "The longest any request the writer holds has waited on something other than its own rows (its wait for a connection, and its commit's time beyond 0.1 ms for each of its own rows); with the main thread's delay, what load shedding reads (SHED_QUEUE_DELAY_MS).",
      registers: [r],
      collect() {
        this.set(probes.writerQueueDelayMs() / 1000);
      },
    });
    new client.Gauge({
      name: 'tg_ingest_inline_queue_wait_seconds',
      help: "How long the oldest small body of a known sender waiting for the main thread's turn to be parsed has waited; the larger of it and the event loop delay is the main thread's part of what load shedding reads (SHED_QUEUE_DELAY_MS).",
      registers: [r],
      collect() {
        this.set(probes.inlineQueueWaitMs() / 1000);
      },
    });
    new client.Gauge({
      name: 'tg_ingest_live_viewers',
      help: 'Live views open on this instance.',
      registers: [r],
      collect() {
        this.set(probes.liveViewers());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_inflight_body_bytes',
      help: 'Request-body bytes held; bounded by MAX_INFLIGHT_BODY_BYTES.',
      registers: [r],
      collect() {
        this.set(probes.bodyBytes());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_held_answers',
      help: 'auth_rate_limited answers held back for AUTH_RATE_LIMITED_DELAY_MS; bounded by AUTH_RATE_LIMITED_HELD_MAX.',
      registers: [r],
      collect() {
        this.set(probes.heldAnswers());
      },
    });
    new client.Gauge({
      name: 'tg_ingest_unauthenticated_waiting',
      help: 'Work before authentication waiting: signature checks and envelopes of large or compressed webapp bodies for their lane of the worker pool (bounded by INITDATA_VERIFY_QUEUE and AUTH_LOW_PRIORITY_QUEUE), small webapp bodies to be parsed on the main thread (bounded by INITDATA_VERIFY_QUEUE).',
      registers: [r],
      collect() {
        this.set(probes.unauthenticatedWaiting());
      },
    });
    let droppedReported = 0;
    new client.Counter({
      name: 'tg_ingest_quarantine_dropped_total',
      help: "Rejected events not kept in quarantine because their project's quarantine held QUARANTINE_MAX_BYTES.",
      registers: [r],
      collect() {
        const n = probes.quarantineDropped();
        this.inc(Math.max(0, n - droppedReported));
        droppedReported = n;
      },
    });
    let lookupsReported = 0;
    new client.Counter({
      name: 'tg_ingest_low_priority_lookups_total',
      help: "API keys carrying this deployment's tag looked up past their address's failed-authentication budget, one at a time.",
      registers: [r],
      collect() {
        const n = probes.lowPriorityLookups();
        this.inc(Math.max(0, n - lookupsReported));
        lookupsReported = n;
      },
    });
    // Counted where they happen; reported as the increase since the last scrape.
    const reportedTasks = new Map<string, number>();
    new client.Counter({
      name: 'tg_ingest_pipeline_tasks_total',
      help: 'Parsing, verification and normalization tasks, by kind (bot_api, webapp_open, webapp, verify, verify_low_priority: a check past a failure budget or past the share of the queue its address holds, webapp_open_low_priority: an envelope likewise, compile_plan, replay) and where they ran (inline on the main thread, pool).',
      labelNames: ['kind', 'where'],
      registers: [r],
      collect() {
        for (const [key, n] of probes.tasks()) {
          const [kind, where] = key.split(':') as [string, string];
          this.labels(kind, where).inc(Math.max(0, n - (reportedTasks.get(key) ?? 0)));
          reportedTasks.set(key, n);
        }
      },
    });
    const reported = new Map<string, number>();
    new client.Counter({
      name: 'tg_ingest_cache_requests_total',
      help: 'Cache lookups, by cache (token, bot, allowance, tracking_plan, initdata) and result (hit, miss).',
      labelNames: ['cache', 'result'],
      registers: [r],
      collect() {
        for (const [cache, c] of Object.entries(probes.caches())) {
          for (const [result, n] of [
            ['hit', c.hits],
            ['miss', c.misses],
          ] as const) {
            const key = `${cache}:${result}`;
            const delta = n - (reported.get(key) ?? 0);
            reported.set(key, n);
            this.labels(cache, result).inc(Math.max(0, delta));
          }
        }
      },
    });
  }

  request(group: RouteGroup, status: number, seconds: number): void {
    const key = `${group}:${status}`;
    let child = this.requestChildren.get(key);
    if (child === undefined) {
      child = this.requests.labels(group, String(status));
      this.requestChildren.set(key, child);
    }
    child.inc();
    this.durations[group].observe(seconds);
  }

  batch(
    endpoint: Endpoint,
    events: number,
    counts: Partial<Record<Outcome, number>>,
    diagnostics: DiagnosticCounts,
  ): void {
    this.batchSize[endpoint].observe(events);
    const e = this.events[endpoint];
    for (const k in counts) {
      const n = counts[k as Outcome]!;
      if (n > 0) e[k as Outcome].inc(n);
    }
    for (const k in diagnostics) this.diagnostics[k]?.inc(diagnostics[k as keyof DiagnosticCounts]!);
  }

  commit(path: CommitPath, rows: number, seconds: number): void {
    this.commitRows.labels(path).observe(rows);
    this.commitSeconds.labels(path).observe(seconds);
  }

  quarantine(codes: Record<string, number>): void {
    for (const code in codes) this.quarantined.labels(code).inc(codes[code]!);
  }

  replay(r: { accepted: number; stillRejected: number; duplicated: number }): void {
    this.replayed.labels('accepted').inc(r.accepted);
    this.replayed.labels('still_rejected').inc(r.stillRejected);
    this.replayed.labels('duplicated').inc(r.duplicated);
  }

  redelivery(): void {
    this.redeliveries.inc();
  }

  limited(endpoint: Endpoint): void {
    this.rateLimited[endpoint].inc();
  }

  authLimitedOn(group: RouteGroup): void {
    this.authLimited[group].inc();
  }

  dbError(kind: DbErrorKind): void {
    this.dbErrors.labels(kind).inc();
  }

  shed(): void {
    this.shedRequests.inc();
  }

  /** The lake's lag, as the lake wing reads it (no sample while it knows none). */
  lakeLag(read: () => number | null): void {
    new client.Gauge({
      name: 'tg_ingest_lake_lag_seconds',
      help: "Seconds from the lake's watermark to now, as this instance last read it (every EXPORT_EVERY_MS).",
      registers: [this.registry],
      collect() {
        const v = read();
        if (v === null) this.reset();
        else this.set(v);
      },
    });
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
