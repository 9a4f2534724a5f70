// Builders for operations, responses, headers and parameters. An operation names the error codes it
// can answer with; their statuses, bodies and descriptions come from the error table, so a code
// that moves to another status moves in the document too.
import { ERRORS, type ErrorCode } from '../base/errors.js';
import { errorSchemaName, ref, type Schema } from './schemas.js';

export type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Headers

const REQUEST_ID_PATTERN = '^[A-Za-z0-9._:-]{1,128}$';
const seconds = { type: 'integer', minimum: 0 };

interface HeaderDef {
  description: string;
  schema: Schema;
}

const HEADERS = {
  'X-Request-Id': {
    description: `The request's id: the client's own X-Request-Id when it matches \`${REQUEST_ID_PATTERN}\`, else a generated UUID.`,
    schema: { type: 'string', pattern: REQUEST_ID_PATTERN },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: seconds },
  'RateLimit-Limit': { description: "Capacity of the token's bucket (`RATE_LIMIT_BURST`).", schema: seconds },
  'RateLimit-Remaining': { description: 'Requests left in the bucket now.', schema: seconds },
  'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: seconds },
  Allow: { description: 'The methods this path answers.', schema: { type: 'string' } },
  'Access-Control-Allow-Origin': {
    description: "`*`, or the request's Origin when it is in `CORS_ALLOW_ORIGINS`; absent otherwise.",
    schema: { type: 'string' },
  },
  'Access-Control-Expose-Headers': {
    description: 'Response headers a browser script may read; sent with Access-Control-Allow-Origin.',
    schema: { type: 'string' },
  },
  Vary: {
    description: 'The request headers the answer depends on: `Origin` (CORS), `Accept-Encoding` (a gzipped file).',
    schema: { type: 'string' },
  },
  'Cache-Control': { description: 'How long a browser or proxy may keep the answer.', schema: { type: 'string' } },
  ETag: { description: "The file's entity tag, for `If-None-Match`.", schema: { type: 'string' } },
  'Content-Encoding': { description: '`gzip` when the client accepts it.', schema: { type: 'string', const: 'gzip' } },
  'Access-Control-Allow-Methods': { description: 'Methods allowed cross-origin.', schema: { type: 'string' } },
  'Access-Control-Allow-Headers': { description: 'Request headers allowed cross-origin.', schema: { type: 'string' } },
  'Access-Control-Max-Age': { description: 'Seconds a browser may cache the preflight.', schema: seconds },
  Upgrade: {
    description: '`websocket`: the connection now speaks the WebSocket protocol.',
    schema: { type: 'string', pattern: '^[Ww]eb[Ss]ocket$' },
  },
  Connection: { description: '`Upgrade`.', schema: { type: 'string', pattern: '^[Uu]pgrade$' } },
  'Sec-WebSocket-Accept': {
    description: "Derived from the request's Sec-WebSocket-Key (RFC 6455).",
    schema: { type: 'string', pattern: '^[A-Za-z0-9+/]{27}=$' },
  },
} as const satisfies Record<string, HeaderDef>;

export type HeaderName = keyof typeof HEADERS;

/** Component headers are the required form; an optional one is written inline. */
const componentName = (name: HeaderName): string => name.replaceAll('-', '');

export function componentHeaders(): Record<string, Obj> {
  const out: Record<string, Obj> = {};
  for (const name of Object.keys(HEADERS) as HeaderName[])
    out[componentName(name)] = { ...HEADERS[name], required: true };
  return out;
}

export type HeaderSet = Partial<Record<HeaderName, 'required' | 'optional'>>;

function headerObjects(set: HeaderSet): Record<string, Obj> {
  const out: Record<string, Obj> = {};
  for (const name of Object.keys(set) as HeaderName[]) {
    out[name] =
      set[name] === 'required'
        ? { $ref: `#/components/headers/${componentName(name)}` }
        : { ...HEADERS[name], required: false };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parameters and security

export function componentParameters(): Record<string, Obj> {
  const id = (name: string, what: string): Obj => ({
    name,
    in: 'path',
    required: true,
    description: `The ${what}'s id, a UUID; anything else answers 404.`,
    schema: { type: 'string' },
  });
  return {
    RequestId: {
      name: 'X-Request-Id',
      in: 'header',
      required: false,
      description:
        'Echoed in the X-Request-Id response header when it matches the pattern; otherwise one is generated.',
      schema: { type: 'string' },
    },
    ContentEncoding: {
      name: 'Content-Encoding',
      in: 'header',
      required: false,
      description: 'gzip, or none. The body once decompressed is bounded by `MAX_BODY_BYTES` too.',
      schema: { type: 'string', enum: ['gzip', 'x-gzip', 'identity'] },
    },
    ProjectId: id('projectId', 'project'),
    BotId: id('botId', 'bot'),
    TokenId: id('tokenId', 'token'),
    ErasureId: id('erasureId', 'erasure'),
    UserId: {
      name: 'userId',
      in: 'path',
      required: true,
      description:
        "The user's platformUserId (the messenger's user id), a positive 64-bit integer; anything else: 400.",
      schema: { type: 'string', pattern: '^[1-9][0-9]{0,18}$' },
    },
  };
}

export const param = (name: string): Obj => ({ $ref: `#/components/parameters/${name}` });

export function securitySchemes(): Record<string, Obj> {
  return {
    ApiKey: {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: "A bot's token, issued with `POST /admin/bots/{botId}/tokens`. Never put it in client code.",
    },
    AdminToken: {
      type: 'http',
      scheme: 'bearer',
      description: 'The admin token: `ADMIN_TOKEN`, or the one generated into `DATA_DIR/admin-token`.',
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Responses

export const json = (schema: Schema): Obj => ({ 'application/json': { schema } });

export interface Success {
  description: string;
  /** Media type → schema; omitted for bodiless answers (204). */
  content?: Obj;
  headers?: HeaderSet;
}

export interface OperationSpec {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Omitted: no authentication. */
  security?: 'ApiKey' | 'AdminToken';
  parameters?: Obj[];
  requestBody?: Obj;
  deprecated?: boolean;
  success: Record<number, Success>;
  /** Every error code the operation can answer with; grouped by their statuses in the table. */
  errors: readonly ErrorCode[];
  /** A 400 may also be the ingestion body (every event rejected). */
  rejectedBatchIs400?: boolean;
  /** The methods of the path, for the 405 and its Allow header. */
  allow?: string;
  /** Headers beyond X-Request-Id, per status (Retry-After on 429/503 and Allow on 405 are added). */
  headers?: (status: number) => HeaderSet;
  /** Statuses written by uWebSockets.js during a WebSocket upgrade, before the service's headers: no X-Request-Id. */
  bareStatuses?: number[];
  /** Per error status, what it means for this operation (put before the list of codes). */
  errorNotes?: Record<number, string>;
  /** Extensions (`x-…`) added to the operation as they are. */
  extensions?: Obj;
}

const requestIdFor = (spec: OperationSpec, status: number): HeaderSet =>
  spec.bareStatuses?.includes(status) ? {} : { 'X-Request-Id': 'required' };

function errorResponse(spec: OperationSpec, status: number, codes: ErrorCode[]): Obj {
  const headers: HeaderSet = { ...requestIdFor(spec, status), ...spec.headers?.(status) };
  if (status === 429 || status === 503) headers['Retry-After'] = 'required';
  if (status === 405) headers.Allow = 'required';
  const list = codes.map((c) => `\`${c}\`: ${ERRORS[c].message}`).join(' / ');
  let schema: Schema = ref(errorSchemaName(status));
  let description = spec.errorNotes?.[status] === undefined ? list : `${spec.errorNotes[status]} ${list}`;
  if (status === 405)
    description = `Any method other than ${spec.allow ?? 'the documented ones'} on this path. ${list}`;
  if (status === 400 && spec.rejectedBatchIs400) {
    schema = { oneOf: [ref('IngestionResponse'), ref(errorSchemaName(400))] };
    description = `Every event was rejected: the ingestion body, nothing stored (resending can never succeed). Or the request is invalid: ${list}`;
  }
  return { description, headers: headerObjects(headers), content: json(schema), 'x-error-codes': codes };
}

function responses(spec: OperationSpec): Record<string, Obj> {
  const out: Record<number, Obj> = {};
  for (const [status, s] of Object.entries(spec.success)) {
    const headers = headerObjects({
      ...requestIdFor(spec, Number(status)),
      ...spec.headers?.(Number(status)),
      ...s.headers,
    });
    out[Number(status)] = {
      description: s.description,
      headers,
      ...(s.content === undefined ? {} : { content: s.content }),
    };
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of spec.errors) {
    const status = ERRORS[code].status as number;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) out[status] = errorResponse(spec, status, codes);
  // Ascending statuses read best.
  return Object.fromEntries(
    Object.keys(out)
      .map(Number)
      .sort((a, b) => a - b)
      .map((s) => [String(s), out[s]]),
  );
}

export function operation(spec: OperationSpec): Obj {
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    tags: spec.tags,
    ...(spec.deprecated ? { deprecated: true } : {}),
    security: spec.security === undefined ? [] : [{ [spec.security]: [] }],
    parameters: [param('RequestId'), ...(spec.parameters ?? [])],
    ...(spec.requestBody === undefined ? {} : { requestBody: spec.requestBody }),
    responses: responses(spec),
    ...spec.extensions,
  };
}
