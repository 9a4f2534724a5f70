// One logical request: encode (gzip above a threshold), POST, and retry what the retry guidance
// allows. The body is rebuilt for each attempt because the webapp endpoint's initData may be refreshed.
import { IngestError } from './errors.js';
import { type Endpoint, isRetryable, parseRetryAfter, retryAfterCapMs, retryDelayMs, sleep } from './retry.js';
import type { IngestResponse } from './types.js';

export interface TransportConfig {
  endpoint: Endpoint;
  url: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
  requestTimeoutMs: number;
  gzipMinBytes: number;
  maxRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  keepAlive: boolean;
}

export type SendResult =
  | { ok: true; status: number; body: IngestResponse; attempts: number; retries: number }
  | { ok: false; error: IngestError; attempts: number; retries: number };

interface Answer {
  status: number;
  body: unknown;
  retryAfter: string | null;
  requestId: string | null;
  cause?: unknown;
}

/** ArrayBuffer-backed, as the DOM typings of fetch's body require. */
interface Encoded {
  bytes: Uint8Array<ArrayBuffer>;
  gzip: boolean;
}

const encoder = new TextEncoder();

export async function send(cfg: TransportConfig, buildBody: () => unknown): Promise<SendResult> {
  let lastJson: string | null = null;
  let encoded: Encoded | null = null;
  // A request's retries wait at most this long in all: a proxy answering Retry-After: 86400 to every attempt would
  // otherwise park it, and close(), for maxRetries times the longest Retry-After honoured.
  const waitBudget = retryAfterCapMs(cfg.retryMaxMs);
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    let json: string;
    try {
      json = JSON.stringify(buildBody());
    } catch (cause) {
      return fail(
        new IngestError({
          code: 'body_error',
          message: `request body: ${String(cause)}`,
          attempts: attempt - 1,
          cause,
        }),
        attempt - 1,
      );
    }
    if (json !== lastJson || encoded === null) {
      encoded = await encode(json, cfg.gzipMinBytes);
      lastJson = json;
    }
    const a = await post(cfg, encoded);
    if (isIngestResponse(a.body) && ((a.status >= 200 && a.status < 300) || a.status === 400)) {
      return { ok: true, status: a.status, body: a.body, attempts: attempt, retries: attempt - 1 };
    }
    const retryable = isRetryable(cfg.endpoint, a.status);
    if (retryable && attempt <= cfg.maxRetries && waited < waitBudget) {
      const ms = Math.min(
        waitBudget - waited,
        retryDelayMs(attempt - 1, parseRetryAfter(a.retryAfter), cfg.retryBaseMs, cfg.retryMaxMs),
      );
      waited += ms;
      await sleep(ms, cfg.keepAlive);
      continue;
    }
    return fail(toError(a, attempt, retryable), attempt);
  }
}

function fail(error: IngestError, attempts: number): SendResult {
  return { ok: false, error, attempts, retries: Math.max(0, attempts - 1) };
}

async function encode(json: string, gzipMinBytes: number): Promise<Encoded> {
  const raw = encoder.encode(json) as Uint8Array<ArrayBuffer>;
  if (raw.byteLength <= gzipMinBytes || typeof CompressionStream !== 'function') return { bytes: raw, gzip: false };
  const stream = new Blob([raw]).stream().pipeThrough(new CompressionStream('gzip'));
  return { bytes: new Uint8Array(await new Response(stream).arrayBuffer()), gzip: true };
}

async function post(cfg: TransportConfig, body: Encoded): Promise<Answer> {
  const headers = body.gzip ? { ...cfg.headers, 'Content-Encoding': 'gzip' } : cfg.headers;
  try {
    const res = await cfg.fetch(cfg.url, {
      method: 'POST',
      headers,
      body: body.bytes,
      signal: AbortSignal.timeout(cfg.requestTimeoutMs),
    });
    // Reading the body can fail too (connection reset): that is still "no answer", hence inside the try.
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    return {
      status: res.status,
      body: parsed,
      retryAfter: res.headers.get('retry-after'),
      requestId: res.headers.get('x-request-id'),
    };
  } catch (cause) {
    return { status: 0, body: null, retryAfter: null, requestId: null, cause };
  }
}

function isIngestResponse(b: unknown): b is IngestResponse {
  if (typeof b !== 'object' || b === null) return false;
  const r = b as Record<string, unknown>;
  return typeof r.accepted === 'number' && typeof r.rejected === 'number' && Array.isArray(r.diagnostics);
}

function toError(a: Answer, attempts: number, retriesExhausted: boolean): IngestError {
  if (a.status === 0) {
    const timeout = a.cause instanceof Error && a.cause.name === 'TimeoutError';
    return new IngestError({
      code: timeout ? 'timeout' : 'network_error',
      message: `no answer: ${a.cause instanceof Error ? a.cause.message : String(a.cause)}`,
      status: null,
      attempts,
      retriesExhausted,
      cause: a.cause,
    });
  }
  const b = (typeof a.body === 'object' && a.body !== null ? a.body : {}) as Record<string, unknown>;
  const code =
    typeof b.error === 'string' ? b.error : a.status >= 200 && a.status < 300 ? 'invalid_response' : `http_${a.status}`;
  const message = typeof b.message === 'string' ? b.message : `unexpected answer ${a.status}`;
  return new IngestError({
    code,
    status: a.status,
    attempts,
    retriesExhausted,
    requestId: a.requestId,
    details: b.details,
    message: retriesExhausted ? `${message} (after ${attempts} attempts)` : message,
  });
}
