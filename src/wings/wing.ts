// A wing is one feature of the service: it builds its parts from the shared ones below, declares its routes (each
// with its OpenAPI operation), starts its background jobs and stops them. The app composes the wings in a list and
// stops them in reverse order. Wings never import each other: what one must do when another acts goes through the
// hooks declared here.
import type { AdminGuard, AdminHooks } from '../admin/api.js';
import type { AdminStore } from '../admin/store.js';
import type { TokenResolver, loadTokenTags } from '../auth/api-tokens.js';
import type { BotResolver } from '../auth/bots.js';
import type { MiniAppSessions } from '../auth/sessions.js';
import type { Config } from '../config/config.js';
import type { Sql } from '../db/connect.js';
import type { ErasurePart } from '../db/erasure.js';
import type { LiveHub } from '../http/live.js';
import type { Readiness } from '../http/readiness.js';
import type { Route } from '../http/route.js';
import type { CommitDeps } from '../ingest/commit.js';
import type { AuthFailures } from '../limits/auth-failures.js';
import type { DerivedBytes } from '../limits/body-budget.js';
import type { Quota } from '../limits/quota.js';
import type { SerialLane } from '../limits/serial-lane.js';
import type { BucketOptions } from '../limits/token-bucket.js';
import type { Logger } from '../base/log.js';
import type { CacheCounts, Metrics } from '../metrics/metrics.js';
import type { PlanCache } from '../quality/plan-cache.js';
import type { QuarantineBudget } from '../quality/quarantine-budget.js';
import type { IngestStats } from '../quality/stats.js';
import type { QualityStore } from '../quality/store.js';
import type { SuppressionCache } from '../privacy/suppressions.js';
import type { IngestPool } from '../worker/pool.js';
import type { GroupCommitWriter } from '../writer/group-commit.js';

export interface Wing {
  readonly name: string;
  readonly routes: readonly Route[];
  /** The OpenAPI component schemas its routes' operations name. */
  readonly schemas?: Record<string, Record<string, unknown>>;
  /** Starts the wing's background jobs; called once every wing is built. */
  start?(): void;
  /** Stops what the wing started; called once requests are drained, wings in reverse order. */
  stop?(): Promise<void> | void;
}

/** What one wing tells the others through the shared layer. */
export interface WingHooks {
  /** What an erasure must also remove, one part per wing that keeps users' data of its own (run in this order). */
  readonly erasureParts: ErasurePart[];
  /** A batch committed with quarantined events of the project. */
  readonly quarantined: ((projectId: string) => void)[];
}

/** The parts more than one wing uses, built once by the app. */
export interface Shared {
  config: Readonly<Config>;
  log: Logger;
  sql: Sql;
  /** For a part that keeps a connection of its own, out of the pool's way (the lake's exporter). */
  databaseUrl: string;
  metrics: Metrics;
  /** Caches counted in the metrics, by the name of their `cache` label; a wing adds its own. */
  caches: Map<string, () => CacheCounts>;
  sink: GroupCommitWriter;
  pool: IngestPool;
  readiness: Readiness;
  // Credentials: the ingestion endpoints check them, the admin API's changes drop them.
  tokens: TokenResolver;
  tokenTags: Awaited<ReturnType<typeof loadTokenTags>>;
  bots: BotResolver;
  sessions: MiniAppSessions;
  authFailures: AuthFailures;
  /** Lookups of tagged API keys from addresses past their failure budget. */
  lowPriorityLookups: SerialLane;
  bucketOptions: BucketOptions;
  // What ingestion checks each event against and counts it in, and the admin API changes.
  quota: Quota;
  plans: PlanCache;
  suppressions: SuppressionCache;
  stats: IngestStats;
  quality: QualityStore;
  /** Bytes of quarantined events each project may still keep. */
  quarantineBudget: QuarantineBudget;
  live: LiveHub;
  /** What both ingestion endpoints commit through. */
  commit: CommitDeps;
  derived: DerivedBytes;
  // The admin API's shared pieces.
  projects: AdminStore;
  guard: AdminGuard;
  /** Local caches dropped at once when the admin API changes what they hold. */
  cacheHooks: AdminHooks;
  hooks: WingHooks;
}
