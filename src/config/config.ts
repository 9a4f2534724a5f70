// The one place that reads process.env: every setting is parsed and checked once at start-up,
// then frozen and passed down. Units live in the names.
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';

export const MESSENGER_PRODUCTION_KEY = 'e7bf03a2fa4602af4580703d88dda5bb59f32ed8b02a56c187fe7d34caed242d';
export const MESSENGER_TEST_KEY = '40055058a4ee38156a06562e52eece92a771bcd8346a8c4615cb7376eddf72ec';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  host: string;
  port: number;
  /** null: start an embedded PostgreSQL under dataDir. */
  databaseUrl: string | null;
  dataDir: string;
  /** null: generated on first start and kept in dataDir/admin-token. */
  adminToken: string | null;
  workers: number;
  /** The messenger's production key, then INITDATA_PUBLIC_KEYS (and the development key, added at start-up). */
  initDataPublicKeys: readonly string[];
  /** The development initData key (made when missing): INITDATA_DEV_KEY_FILE, else DATA_DIR's with the embedded database. */
  initDataDevKeyFile: string | null;
  initDataMaxAgeS: number;
  rateLimitPerMin: number;
  rateLimitBurst: number;
  logLevel: LogLevel;
  maxBodyBytes: number;
  /** The webapp endpoint's own body limit: its credentials are inside the body. */
  webappMaxBodyBytes: number;
  /** Request-body bytes held at once across all requests (and what requests derived from them); past it, 503. */
  maxInflightBodyBytes: number;
  /** How deep objects and arrays of a JSON body may nest. */
  maxJsonDepth: number;
  /** users[] profiles a bot_api request may carry. */
  maxProfilesPerRequest: number;
  /** How much of a webapp body (decompressed) is read before its sender is known. */
  webappEnvelopeMaxBytes: number;
  /** Signature checks and envelopes of clients past a failure budget waiting for the low-priority lane; past it, 503. */
  authLowPriorityQueue: number;
  corsAllowOrigins: readonly string[];
  /** Take the client address from X-Forwarded-For (the last entry, added by a trusted proxy). */
  trustProxy: boolean;
  /** Failed authentications per client address: bucket size and refill per second. */
  authFailureBurst: number;
  authFailureRefillPerS: number;
  /** How late a 429 auth_rate_limited leaves, and how many may be held at once. */
  authRateLimitedDelayMs: number;
  authRateLimitedHeldMax: number;
  /** Failed initData signature checks per bot. */
  initDataFailureBurstPerBot: number;
  initDataFailureRefillPerSPerBot: number;
  /**
   * Work before authentication waiting for the worker lane (signature checks, envelopes), and, a bound of its own, small
   * webapp bodies waiting to be parsed on the main thread before their sender is known; past either, 503.
   */
  initDataVerifyQueue: number;
  /** Failed admin authentications per client address and minute. */
  adminAuthFailuresPerMin: number;
  /** Months of events kept besides the current one (whole monthly partitions dropped past it); null: all. */
  eventsRetentionMonths: number | null;
  /** Quarantined events kept per project (the oldest go first) and for how long. */
  quarantineMaxEvents: number;
  /** Bytes a project's quarantine may hold; past it, rejected events are dropped and counted. */
  quarantineMaxBytes: number;
  /** How often the report aggregates take in what was committed since they last did. */
  reportsEveryMs: number;
  /** Users an erasure deletes from one events partition per transaction. */
  erasureUsersPerStep: number;
  /** The lake's directory (EXPORT_DIR); null: no lake, and no funnels. */
  exportDir: string | null;
  /** How often rows stored since the last export are written to the lake. */
  exportEveryMs: number;
  /** Rows one lake file set holds at most: what one export reads into memory and a temporary file. */
  exportMaxRows: number;
  /** Threads and memory of the columnar engine that writes the lake and answers funnels. */
  lakeThreads: number;
  lakeMemoryMb: number;
  /** Disk each engine may spill to (DATA_DIR/lake-tmp). */
  lakeTempMaxMb: number;
  /** How long a funnel may take before it answers 503. */
  funnelTimeoutMs: number;
  quarantineRetentionDays: number;
  /** How often the quarantine's bounds are enforced. */
  quarantinePruneEveryMs: number;
  /** Live view messages per viewer and second. */
  liveMessagesPerS: number;
  /** A separate listener for /admin and /metrics; null: the main one serves them. */
  adminHost: string | null;
  adminPort: number | null;
  /** Bodies up to this size are processed on the main thread; larger ones in the worker pool. */
  inlineMaxBytes: number;
  batchMaxRows: number;
  batchMaxWaitMs: number;
  dbWriterConnections: number;
  dbPoolSize: number;
  /** How long cached tokens, bots, allowances and tracking plans are trusted before they are re-read. */
  authCacheTtlMs: number;
  /** Known tokens and bots kept in memory (unknown ones have a small cache of their own). */
  authCacheMaxEntries: number;
  /** A request waiting that long for a writer connection, or a commit not settled by then, is answered 503. */
  writeTimeoutMs: number;
  /** Rows held by the writer (queued or committing); a request that would exceed it gets 503. */
  writerMaxQueuedRows: number;
  /**
   * Load shedding's bound on the queue delay (the writer's, GroupCommitWriter.queueDelayMs, plus the event loop's), beyond
   * the BATCH_MAX_WAIT_MS a queued request waits by design: past it for 100 ms, ingestion requests get 503 unread until
   * the delay is back under it (src/limits/shedding.ts).
   */
  shedQueueDelayMs: number;
  shutdownTimeoutMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  if (!/^-?\d+$/.test(v)) throw new ConfigError(name, `must be an integer, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function positiveNumber(env: Env, name: string, fallback: number): number {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(n > 0)) throw new ConfigError(name, `must be a positive number, got "${v}"`);
  return n;
}

/** INITDATA_PUBLIC_KEYS adds to the messenger's production key: a test or development key never locks it out. */
function publicKeys(env: Env): string[] {
  const v = raw(env, 'INITDATA_PUBLIC_KEYS');
  if (v === undefined) return [MESSENGER_PRODUCTION_KEY];
  const keys = v
    .split(',')
    .map((k) => k.trim().toLowerCase())
    .filter((k) => k !== '');
  if (keys.length === 0) throw new ConfigError('INITDATA_PUBLIC_KEYS', 'must list at least one key');
  for (const k of keys) {
    if (!/^[0-9a-f]{64}$/.test(k))
      throw new ConfigError('INITDATA_PUBLIC_KEYS', `"${k}" is not a 32-byte hex Ed25519 public key`);
  }
  return [...new Set([MESSENGER_PRODUCTION_KEY, ...keys])];
}

export const DEV_KEY_FILE_NAME = 'initdata-dev-key.pem';

/** `none` turns the development key off, also with the embedded database. */
function devKeyFile(env: Env, embedded: boolean): string | null {
  const v = raw(env, 'INITDATA_DEV_KEY_FILE');
  if (v === 'none') return null;
  if (v !== undefined) return resolve(v);
  return embedded ? join(dataDir(env), DEV_KEY_FILE_NAME) : null;
}

function databaseUrl(env: Env): string | null {
  const v = raw(env, 'DATABASE_URL');
  if (v === undefined) return null;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError('DATABASE_URL', 'is not a URL (expected postgres://user:password@host:port/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `must start with postgres:// or postgresql://, got "${url.protocol}"`);
  }
  return v;
}

function flag(env: Env, name: string): boolean {
  const v = raw(env, name);
  if (v === undefined) return false;
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw new ConfigError(name, `must be 1 or 0, got "${v}"`);
}

function hostName(env: Env, name: string, fallback: string): string;
function hostName(env: Env, name: string, fallback: null): string | null;
function hostName(env: Env, name: string, fallback: string | null): string | null {
  const host = raw(env, name) ?? fallback;
  if (host !== null && !/^[A-Za-z0-9.:_-]+$/.test(host))
    throw new ConfigError(name, `is not a host name or address: "${host}"`);
  return host;
}

/** Where the service keeps its embedded database, admin token and run-time files. */
export function dataDir(env: Env = process.env): string {
  return resolve(raw(env, 'DATA_DIR') ?? './.data');
}

/** The lake's directory: EXPORT_DIR, by default DATA_DIR/lake; `none` turns the lake off. */
function exportDir(env: Env): string | null {
  const v = raw(env, 'EXPORT_DIR');
  if (v === 'none') return null;
  return resolve(v ?? join(dataDir(env), 'lake'));
}

/** What the admin CLI reads: where the service keeps its files and how to reach it. */
export function readCliEnv(env: Env = process.env) {
  const adminToken = raw(env, 'ADMIN_TOKEN') ?? null;
  const adminUrl = raw(env, 'ADMIN_URL') ?? null;
  return {
    dataDir: dataDir(env),
    adminToken,
    adminUrl: adminUrl?.replace(/\/+$/, '') ?? null,
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    /** Where the service keeps its development initData key, made or not. */
    initDataDevKeyFile: devKeyFile(env, true) ?? join(dataDir(env), DEV_KEY_FILE_NAME),
  };
}

function origins(env: Env): string[] {
  const v = raw(env, 'CORS_ALLOW_ORIGINS');
  if (v === undefined) return ['*'];
  const list = v
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const o of list) {
    if (o !== '*' && !/^https?:\/\/[^/\s]+$/.test(o)) {
      throw new ConfigError('CORS_ALLOW_ORIGINS', `"${o}" is not "*" or an origin such as https://app.example.com`);
    }
  }
  return list;
}

export function readConfig(env: Env = process.env): Readonly<Config> {
  const logLevel = (raw(env, 'LOG_LEVEL') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const adminToken = raw(env, 'ADMIN_TOKEN') ?? null;
  if (adminToken !== null && adminToken.length < 16)
    throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  const host = hostName(env, 'HOST', '0.0.0.0');
  const adminPort = raw(env, 'ADMIN_PORT') === undefined ? null : integer(env, 'ADMIN_PORT', 0, 0, 65535);
  const adminHostSet = hostName(env, 'ADMIN_HOST', null);
  if (adminHostSet !== null && adminPort === null)
    throw new ConfigError('ADMIN_PORT', 'must be set when ADMIN_HOST is');
  const adminHost = adminHostSet ?? (adminPort === null ? null : '127.0.0.1');

  const config: Config = {
    host,
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    dataDir: dataDir(env),
    adminToken,
    workers: integer(env, 'WORKERS', availableParallelism(), 1, 256),
    initDataPublicKeys: publicKeys(env),
    initDataDevKeyFile: devKeyFile(env, databaseUrl(env) === null),
    initDataMaxAgeS: integer(env, 'INITDATA_MAX_AGE_S', 900, 1),
    rateLimitPerMin: positiveNumber(env, 'RATE_LIMIT_PER_MIN', 120),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', 300, 1),
    logLevel,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    webappMaxBodyBytes: integer(env, 'WEBAPP_MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxInflightBodyBytes: integer(
      env,
      'MAX_INFLIGHT_BODY_BYTES',
      256 * 1024 * 1024,
      1024 * 1024,
      64 * 1024 * 1024 * 1024,
    ),
    maxJsonDepth: integer(env, 'MAX_JSON_DEPTH', 64, 8, 1000),
    maxProfilesPerRequest: integer(env, 'MAX_PROFILES_PER_REQUEST', 1000, 1, 100_000),
    webappEnvelopeMaxBytes: integer(env, 'WEBAPP_ENVELOPE_MAX_BYTES', 64 * 1024, 1024, 1024 * 1024),
    authLowPriorityQueue: integer(env, 'AUTH_LOW_PRIORITY_QUEUE', 64, 0, 100_000),
    corsAllowOrigins: origins(env),
    trustProxy: flag(env, 'TRUST_PROXY'),
    authFailureBurst: integer(env, 'AUTH_FAILURE_BURST', 100, 1),
    authFailureRefillPerS: positiveNumber(env, 'AUTH_FAILURE_REFILL_PER_S', 10),
    authRateLimitedDelayMs: integer(env, 'AUTH_RATE_LIMITED_DELAY_MS', 1000, 0, 10_000),
    authRateLimitedHeldMax: integer(env, 'AUTH_RATE_LIMITED_HELD_MAX', 10_000, 0, 1_000_000),
    initDataFailureBurstPerBot: integer(env, 'INITDATA_FAILURE_BURST_PER_BOT', 1000, 1),
    initDataFailureRefillPerSPerBot: positiveNumber(env, 'INITDATA_FAILURE_REFILL_PER_S_PER_BOT', 100),
    initDataVerifyQueue: integer(env, 'INITDATA_VERIFY_QUEUE', 4096, 1, 1_000_000),
    adminAuthFailuresPerMin: integer(env, 'ADMIN_AUTH_FAILURES_PER_MIN', 20, 1),
    adminHost,
    adminPort,
    // At least 1: deduplication looks back into the previous month's partition.
    eventsRetentionMonths:
      raw(env, 'EVENTS_RETENTION_MONTHS') === undefined ? null : integer(env, 'EVENTS_RETENTION_MONTHS', 0, 1, 1200),
    quarantineMaxEvents: integer(env, 'QUARANTINE_MAX_EVENTS', 100_000, 1, 100_000_000),
    quarantineMaxBytes: integer(env, 'QUARANTINE_MAX_BYTES', 1024 * 1024 * 1024, 1024 * 1024, 1024 ** 4),
    quarantineRetentionDays: integer(env, 'QUARANTINE_RETENTION_DAYS', 7, 1, 3650),
    reportsEveryMs: integer(env, 'REPORTS_EVERY_MS', 1000, 100, 3_600_000),
    erasureUsersPerStep: integer(env, 'ERASURE_USERS_PER_STEP', 25, 1, 5000),
    exportDir: exportDir(env),
    exportEveryMs: integer(env, 'EXPORT_EVERY_MS', 60_000, 1000, 3_600_000),
    exportMaxRows: integer(env, 'EXPORT_MAX_ROWS', 2_000_000, 1000, 100_000_000),
    lakeThreads: integer(env, 'LAKE_THREADS', 2, 1, 64),
    lakeMemoryMb: integer(env, 'LAKE_MEMORY_MB', 1024, 64, 1024 * 1024),
    lakeTempMaxMb: integer(env, 'LAKE_TEMP_MAX_MB', 16_384, 64, 1024 * 1024 * 1024),
    funnelTimeoutMs: integer(env, 'FUNNEL_TIMEOUT_MS', 30_000, 100, 600_000),
    quarantinePruneEveryMs: integer(env, 'QUARANTINE_PRUNE_EVERY_MS', 30_000, 100, 3_600_000),
    liveMessagesPerS: integer(env, 'LIVE_MESSAGES_PER_S', 50, 1, 10_000),
    // Bodies parsed on the main thread stay small: a larger one would stall every other request.
    inlineMaxBytes: integer(env, 'INLINE_MAX_BYTES', 16 * 1024, 0, 64 * 1024),
    batchMaxRows: integer(env, 'BATCH_MAX_ROWS', 4000, 1, 1_000_000),
    // Only while another batch commits: then gathering makes commits larger, which costs less CPU
    // per event than it adds in waiting (measured: small batches 1.3x -> 1.4x the bare reference).
    batchMaxWaitMs: integer(env, 'BATCH_MAX_WAIT_MS', 5, 0, 10_000),
    dbWriterConnections: integer(env, 'DB_WRITER_CONNECTIONS', 4, 1, 64),
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 4, 1, 100),
    authCacheTtlMs: integer(env, 'AUTH_CACHE_TTL_MS', 2000, 0, 60_000),
    authCacheMaxEntries: integer(env, 'AUTH_CACHE_MAX_ENTRIES', 100_000, 1, 10_000_000),
    writeTimeoutMs: integer(env, 'WRITE_TIMEOUT_MS', 10_000, 100, 600_000),
    writerMaxQueuedRows: integer(env, 'WRITER_MAX_QUEUED_ROWS', 200_000, 1000, 100_000_000),
    shedQueueDelayMs: integer(env, 'SHED_QUEUE_DELAY_MS', 50, 1, 600_000),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 30_000, 0, 600_000),
  };
  return Object.freeze(config);
}
