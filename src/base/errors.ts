// The one table of error responses. Every non-202 answer other than "every event rejected"
// is {"error": <code>, "message": <text>, "details"?: {...}} with the status given here.

export const ERRORS = {
  // 400: the request itself is wrong; resending it unchanged can never succeed.
  invalid_json: { status: 400, message: 'The body is not valid JSON.' },
  invalid_utf8: { status: 400, message: 'The body is not valid UTF-8.' },
  invalid_body: { status: 400, message: 'The body must be a JSON object.' },
  events_invalid: { status: 400, message: '"events" must be a non-empty array of at most 1000 events.' },
  unsupported_version: { status: 400, message: 'Unrecognised "version"; omit the field.' },
  event_invalid: { status: 400, message: 'An event lacks a field required at parse time; nothing was stored.' },
  bot_id_invalid: { status: 400, message: '"botId" must be a UUID.' },
  invalid_gzip: { status: 400, message: 'The gzip body could not be decompressed.' },
  bad_request: { status: 400, message: 'The request is invalid.' },
  too_many_profiles: {
    status: 400,
    message: '"users" holds more profiles than a request may carry (MAX_PROFILES_PER_REQUEST).',
  },
  storage_refused: {
    status: 400,
    message: 'The database refused to store these events; nothing of this request was stored.',
  },
  // 401: who is calling could not be established.
  api_key_missing: { status: 401, message: 'The X-API-Key header is missing.' },
  api_key_invalid: { status: 401, message: 'The API key is unknown or revoked.' },
  bot_unknown: { status: 401, message: 'The bot or its initData could not be authenticated.' },
  initdata_empty: { status: 401, message: 'auth.initData is empty.' },
  initdata_malformed: { status: 401, message: 'auth.initData could not be parsed.' },
  initdata_signature_missing: { status: 401, message: 'auth.initData carries no signature.' },
  initdata_auth_date_missing: { status: 401, message: 'auth.initData carries no valid auth_date.' },
  initdata_user_missing: { status: 401, message: 'auth.initData carries no valid user.' },
  initdata_signature_invalid: { status: 401, message: 'The signature of auth.initData is not valid for this bot.' },
  initdata_expired: { status: 401, message: 'auth.initData has expired; open the mini-app again for a fresh one.' },
  initdata_from_future: { status: 401, message: 'The auth_date of auth.initData lies in the future.' },
  admin_unauthorized: {
    status: 401,
    message: 'A valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>).',
  },
  // 402, 403, 409: the account's state refuses the request until someone changes it.
  allowance_exhausted: { status: 402, message: "The project's event allowance for this month is exhausted." },
  api_ingest_disabled: { status: 403, message: "API ingestion is switched off in the bot's settings." },
  bot_not_linked: { status: 403, message: 'The bot is not linked to a project; link it before sending events.' },
  webapp_bot_not_linked: { status: 409, message: 'The bot is not linked to a project.' },
  webapp_bot_not_configured: { status: 409, message: "The bot's messenger id is not configured." },
  miniapp_ingest_disabled: { status: 409, message: "Mini-app ingestion is switched off in the bot's settings." },
  // Transport-level refusals.
  not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.' },
  payload_too_large: { status: 413, message: 'The body exceeds the size limit.' },
  unsupported_media_type: {
    status: 415,
    message: 'The body must be JSON (Content-Type application/json; the webapp endpoint also takes text/plain).',
  },
  unsupported_encoding: { status: 415, message: 'Content-Encoding must be gzip or identity.' },
  rate_limited: { status: 429, message: 'Request rate exceeded; retry after the delay in Retry-After.' },
  auth_rate_limited: {
    status: 429,
    message: 'Too many failed authentication attempts; retry after the delay in Retry-After.',
  },
  messenger_bot_id_taken: { status: 409, message: 'Another bot already has this messengerBotId.' },
  lake_off: { status: 409, message: 'The lake is off (EXPORT_DIR=none): funnels read it.' },
  // 5xx: the service's side; retrying later is safe because events are deduplicated by eventId.
  internal: { status: 500, message: 'Internal error.' },
  overloaded: {
    status: 503,
    message: 'The service has more work in hand than it accepts at once; retry after the delay in Retry-After.',
  },
  unavailable: {
    status: 503,
    message: 'The service is temporarily unavailable; retry after the delay in Retry-After.',
  },
  funnel_timeout: {
    status: 503,
    message: 'The funnel took longer than FUNNEL_TIMEOUT_MS; a shorter range or fewer steps answer sooner.',
  },
  funnels_busy: {
    status: 503,
    message: 'Two funnels are being counted on this instance already; retry after the delay in Retry-After.',
  },
  shutting_down: { status: 503, message: 'The service is restarting; retry after the delay in Retry-After.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Why a request is refused whole, as the pipeline (which knows nothing of HTTP) reports it. */
export interface Refusal {
  code: ErrorCode;
  message?: string;
  details?: Record<string, unknown>;
}

export interface HttpErrorOptions {
  /** Replaces the table's message; say what to do, never echo a secret. */
  message?: string;
  details?: Record<string, unknown>;
  /** Seconds for Retry-After; 429 and 503 default to 1. */
  retryAfterS?: number;
  headers?: Record<string, string>;
}

/** A refusal on its way to the client: thrown anywhere in a handler, answered in one place. */
export class HttpError extends Error {
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterS: number | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    readonly code: ErrorCode,
    opts: HttpErrorOptions = {},
  ) {
    // A refusal is an answer, not a fault: nothing logs its stack, and capturing one was about a
    // tenth of the CPU a 401 or 429 costs under a credential flood.
    const depth = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(opts.message ?? ERRORS[code].message);
    Error.stackTraceLimit = depth;
    this.name = 'HttpError';
    this.status = ERRORS[code].status;
    this.details = opts.details;
    this.retryAfterS = opts.retryAfterS;
    this.headers = opts.headers;
  }

  static from(r: Refusal): HttpError {
    return new HttpError(r.code, { message: r.message, details: r.details });
  }

  body(): ErrorBody {
    return this.details === undefined
      ? { error: this.code, message: this.message }
      : { error: this.code, message: this.message, details: this.details };
  }
}

export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};
