// The one error type the client reports, so callers can branch on `code` and `status`.

export interface IngestErrorInit {
  /**
   * The server's `error` code (`api_key_invalid`, `rate_limited`, ...), or a client code: `network_error`, `timeout`,
   * `invalid_response`, `queue_full`, `queue_dropped`, `client_closed`, `event_unserializable`, `body_error`, `client_error`.
   */
  code: string;
  message: string;
  /** HTTP status of the last attempt; null when no response arrived. */
  status?: number | null;
  attempts?: number;
  /** True when the last status was retryable but `maxRetries` ran out. */
  retriesExhausted?: boolean;
  requestId?: string | null;
  details?: unknown;
  cause?: unknown;
}

export class IngestError extends Error {
  readonly code: string;
  readonly status: number | null;
  readonly attempts: number;
  readonly retriesExhausted: boolean;
  readonly requestId: string | null;
  readonly details: unknown;

  constructor(init: IngestErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'IngestError';
    this.code = init.code;
    this.status = init.status ?? null;
    this.attempts = init.attempts ?? 0;
    this.retriesExhausted = init.retriesExhausted ?? false;
    this.requestId = init.requestId ?? null;
    this.details = init.details;
  }
}
