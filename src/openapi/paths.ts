// Every route of src/app.ts, src/admin/api.ts and src/admin/page.ts as an OpenAPI path item.
import type { ErrorCode } from '../errors.js';
import { ERROR_CODES, ref } from './schemas.js';
import { json, type HeaderSet, type Obj, operation, type OperationSpec, param } from './operations.js';

// ---------------------------------------------------------------------------------------------
// Ingestion

const BODY_ERRORS: ErrorCode[] = ['invalid_json', 'invalid_utf8', 'invalid_body', 'events_invalid', 'invalid_gzip', 'payload_too_large'];
const HEADER_ERRORS: ErrorCode[] = ['unsupported_media_type', 'unsupported_encoding', 'method_not_allowed'];
const SERVICE_ERRORS: ErrorCode[] = ['rate_limited', 'auth_rate_limited', 'internal', 'overloaded', 'unavailable', 'shutting_down'];
const INITDATA_ERRORS = ERROR_CODES.filter((c) => c.startsWith('initdata_'));

const accepted = { description: 'The events are committed to PostgreSQL; the body counts them and lists diagnostics.', content: json(ref('IngestionResponse')) };

const RETRY = 'Retry only 429 and 503 (webapp: 408, 429 and 5xx), honouring Retry-After, with the same eventIds: stored events are recognised and neither stored nor billed twice.';

/** Every answer of the bot_api endpoint carries them (before the token is known, a full bucket); a 405 comes from no endpoint. */
function rateLimitHeaders(status: number): HeaderSet {
  if (status === 405) return {};
  return { 'RateLimit-Limit': 'required', 'RateLimit-Remaining': 'required', 'RateLimit-Reset': 'required' };
}

const corsHeaders = (): HeaderSet => ({ 'Access-Control-Allow-Origin': 'optional', 'Access-Control-Expose-Headers': 'optional', Vary: 'optional' });

function endpointB(path: string, operationId: string): Obj {
  const spec: OperationSpec = {
    operationId,
    summary: path === '/tg' ? 'Ingest events from a bot backend (bot_api endpoint, B)' : 'Ingest events from a bot backend (bot_api endpoint, B; alias of POST /tg)',
    description: [
      'Authenticated by a per-bot token in `X-API-Key`; the token decides bot and project.',
      'Checks in this order: Content-Type (JSON or absent) and Content-Encoding (415), the key (401; a key that must be looked up is answered 429 `auth_rate_limited` to an address past its budget of failed lookups), the token bucket (429), the bot\'s switches (403), the plan (402, 503), the body (400, 413 past `MAX_BODY_BYTES`, also once decompressed), then each event.',
      'RateLimit-* headers come with every answer (before the token is known, those of a full bucket).',
      RETRY,
    ].join('\n\n'),
    tags: ['ingestion'],
    security: 'ApiKey',
    parameters: [param('ContentEncoding')],
    requestBody: { required: true, content: json(ref('ServerRequest')) },
    success: { 202: accepted },
    errors: [...BODY_ERRORS, 'unsupported_version', 'event_invalid', 'api_key_missing', 'api_key_invalid', 'allowance_exhausted', 'api_ingest_disabled', 'bot_not_linked', ...HEADER_ERRORS, ...SERVICE_ERRORS],
    rejectedBatchIs400: true,
    allow: 'POST',
    headers: rateLimitHeaders,
  };
  return { post: operation(spec) };
}

function endpointA(path: string, idSuffix: string): Obj {
  const alias = path === '/tg/webapp' ? '' : '; alias of POST /tg/webapp';
  const post: OperationSpec = {
    operationId: `postWebappEvents${idSuffix}`,
    summary: `Ingest events from mini-app code (webapp endpoint, A${alias})`,
    description: [
      'The user is identified by `auth.initData`, signed by the messenger with Ed25519; no secret is involved, so this is the endpoint for client code.',
      'Content-Type JSON, `text/plain` (no CORS preflight) or absent. Checks in this order: the body (400; 413 past `WEBAPP_MAX_BODY_BYTES`, also once decompressed), `botId` (400, 401, 409), initData (401; 429 `auth_rate_limited` once the client address or the bot is past its budget of failed checks), the bot\'s settings (409), the token bucket of (bot, user) (429), the plan (402, 503), then each event.',
      RETRY,
    ].join('\n\n'),
    tags: ['ingestion'],
    parameters: [param('ContentEncoding')],
    requestBody: { required: true, content: { ...json(ref('WebappRequest')), 'text/plain': { schema: ref('WebappRequest') } } },
    success: { 202: accepted },
    errors: [...BODY_ERRORS, 'bot_id_invalid', 'bot_unknown', ...INITDATA_ERRORS, 'allowance_exhausted', 'webapp_bot_not_linked', 'webapp_bot_not_configured', 'miniapp_ingest_disabled', ...HEADER_ERRORS, ...SERVICE_ERRORS],
    rejectedBatchIs400: true,
    allow: 'POST, OPTIONS',
    headers: corsHeaders,
  };
  const options: OperationSpec = {
    operationId: `preflightWebappEvents${idSuffix}`,
    summary: 'CORS preflight of the webapp endpoint',
    tags: ['ingestion'],
    success: {
      204: {
        description: 'Allows POST with Content-Type and Content-Encoding from the origins in `CORS_ALLOW_ORIGINS`.',
        headers: { 'Access-Control-Allow-Methods': 'required', 'Access-Control-Allow-Headers': 'required', 'Access-Control-Max-Age': 'required' },
      },
    },
    errors: [],
    headers: corsHeaders,
  };
  return { post: operation(post), options: operation(options) };
}

// ---------------------------------------------------------------------------------------------
// Admin API

interface AdminSpec {
  operationId: string;
  summary: string;
  description?: string;
  ids?: ('ProjectId' | 'BotId' | 'TokenId')[];
  /** Component name of the JSON body. */
  body?: string;
  bodyRequired?: boolean;
  success: OperationSpec['success'];
  /** Codes beyond 401 (and 400/413 with a body, 404 with an id). */
  errors?: ErrorCode[];
}

function adminOp(a: AdminSpec): Obj {
  const errors: ErrorCode[] = ['admin_unauthorized', 'auth_rate_limited'];
  if (a.body !== undefined) errors.push('bad_request', 'payload_too_large');
  if (a.ids !== undefined) errors.push('not_found');
  errors.push(...(a.errors ?? []), 'internal');
  return operation({
    operationId: a.operationId,
    summary: a.summary,
    ...(a.description === undefined ? {} : { description: a.description }),
    tags: ['admin'],
    security: 'AdminToken',
    parameters: (a.ids ?? []).map(param),
    ...(a.body === undefined ? {} : { requestBody: { required: a.bodyRequired ?? true, content: json(ref(a.body)) } }),
    success: a.success,
    errors: [...new Set(errors)],
  });
}

const ok = (description: string, schema: Obj) => ({ description, content: json(schema) });
const list = (name: string): Obj => ({ type: 'array', items: ref(name) });

function adminPaths(): Record<string, Obj> {
  return {
    '/admin/projects': {
      post: adminOp({ operationId: 'createProject', summary: 'Create a project', body: 'CreateProject', success: { 201: ok('Created; no eventAllowance (or null) is unlimited.', ref('ProjectCreated')) } }),
      get: adminOp({ operationId: 'listProjects', summary: 'List projects', success: { 200: ok('Every project.', list('Project')) } }),
    },
    '/admin/projects/{projectId}': {
      get: adminOp({ operationId: 'getProject', summary: 'Read a project', ids: ['ProjectId'], success: { 200: ok('The project.', ref('Project')) } }),
      patch: adminOp({ operationId: 'patchProject', summary: 'Change a project or its plan', ids: ['ProjectId'], body: 'PatchProject', success: { 200: ok('The changed project.', ref('Project')) } }),
    },
    '/admin/projects/{projectId}/usage': {
      get: adminOp({ operationId: 'getProjectUsage', summary: "This calendar month's usage (UTC)", ids: ['ProjectId'], success: { 200: ok('Usage of the current month.', ref('Usage')) } }),
    },
    '/admin/projects/{projectId}/reports/revenue': {
      get: adminOp({
        operationId: 'getRevenueReport', summary: 'Revenue per currency',
        description: "Sums `tg.total_amount` of `successful_payment` events from the bot_api endpoint per `tg.currency`, in the currency's smallest units; a payment reported by two connections counts once.",
        ids: ['ProjectId'], success: { 200: ok('One line per currency.', list('RevenueLine')) },
      }),
    },
    '/admin/projects/{projectId}/stats': {
      get: adminOp({ operationId: 'getProjectStats', summary: "This instance's live counts", ids: ['ProjectId'], success: { 200: ok('The last 60 minutes and totals since start.', ref('ProjectStats')) } }),
    },
    '/admin/projects/{projectId}/bots': {
      get: adminOp({ operationId: 'listProjectBots', summary: "A project's bots", ids: ['ProjectId'], success: { 200: ok('Bots linked to the project.', list('Bot')) } }),
    },
    '/admin/bots': {
      post: adminOp({
        operationId: 'createBot', summary: 'Create a bot', description: 'Both switches (`miniAppIngest`, `apiIngest`) start on. An unknown `projectId` is 404.',
        body: 'CreateBot', bodyRequired: false, errors: ['not_found', 'messenger_bot_id_taken'], success: { 201: ok('Created.', ref('BotCreated')) },
      }),
      get: adminOp({ operationId: 'listBots', summary: 'List bots', success: { 200: ok('Every bot.', list('Bot')) } }),
    },
    '/admin/bots/{botId}': {
      get: adminOp({ operationId: 'getBot', summary: 'Read a bot', ids: ['BotId'], success: { 200: ok('The bot.', ref('Bot')) } }),
      patch: adminOp({
        operationId: 'patchBot', summary: 'Change a bot', description: 'An unknown bot or `projectId` is 404.',
        ids: ['BotId'], body: 'PatchBot', errors: ['messenger_bot_id_taken'], success: { 200: ok('The changed bot.', ref('Bot')) },
      }),
    },
    '/admin/bots/{botId}/tokens': {
      post: adminOp({ operationId: 'createToken', summary: 'Issue an API token for the bot_api endpoint', ids: ['BotId'], success: { 201: ok('The token; its value is shown this once.', ref('TokenCreated')) } }),
      get: adminOp({ operationId: 'listTokens', summary: "A bot's tokens", ids: ['BotId'], success: { 200: ok('Tokens without their values.', list('TokenSummary')) } }),
    },
    '/admin/tokens/{tokenId}': {
      delete: adminOp({
        operationId: 'revokeToken', summary: 'Revoke a token',
        description: 'Refused at once on this instance, within 2 × `AUTH_CACHE_TTL_MS` on others. Revoking twice keeps the first time.',
        ids: ['TokenId'], success: { 204: { description: 'Revoked.' } },
      }),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operations

/** The admin page's files under /admin/page/ (src/admin/page.ts) and their media types. */
const PAGE_ASSETS: Record<string, string> = { 'admin.js': 'text/javascript', 'admin.css': 'text/css', 'icon.svg': 'image/svg+xml' };

function operationsPaths(): Record<string, Obj> {
  const get = (spec: Omit<OperationSpec, 'tags' | 'errors'> & { errors?: ErrorCode[] }): Obj => ({ get: operation({ tags: ['operations'], errors: [], ...spec }) });
  const page = (operationId: string): Obj => get({
    operationId, summary: 'The admin web page',
    description: 'Static, the same at /admin and /admin/; it calls the admin API with the token the user enters.',
    success: { 200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  });
  return {
    '/admin/': page('adminPage'),
    '/admin': page('adminPageNoSlash'),
    '/admin/page/{file}': get({
      operationId: 'adminPageAsset', summary: "The admin page's static files",
      parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string', enum: Object.keys(PAGE_ASSETS) } }],
      success: { 200: { description: 'The file.', content: Object.fromEntries(Object.values(PAGE_ASSETS).map((type) => [type, { schema: { type: 'string' } }])) } },
    }),
    '/healthz': get({ operationId: 'healthz', summary: 'Liveness', success: { 200: ok('The process is up.', ref('Health')) } }),
    '/readyz': get({
      operationId: 'readyz', summary: 'Readiness',
      success: {
        200: ok('The database answers and migrations are done.', ref('Readiness')),
        503: { description: 'Not ready: shutting down, migrations pending, or the database unreachable (then with Retry-After).', content: json(ref('Readiness')), headers: { 'Retry-After': 'optional' } },
      },
    }),
    '/metrics': get({
      operationId: 'metrics', summary: 'Prometheus metrics', errors: ['internal'],
      success: { 200: { description: 'Prometheus text exposition format 0.0.4.', content: { 'text/plain': { schema: { type: 'string' } } } } },
    }),
    '/openapi.json': get({ operationId: 'openapi', summary: 'This document', success: { 200: ok('The OpenAPI 3.1 document.', {
      type: 'object', required: ['openapi', 'info', 'paths'],
      properties: { openapi: { type: 'string', pattern: '^3\\.1\\.' }, info: { type: 'object' }, paths: { type: 'object' } },
    }) } }),
  };
}

export function paths(): Record<string, Obj> {
  return {
    '/tg': endpointB('/tg', 'postServerEvents'),
    '/messenger': endpointB('/messenger', 'postServerEventsMessenger'),
    '/tg/webapp': endpointA('/tg/webapp', ''),
    '/messenger/webapp': endpointA('/messenger/webapp', 'Messenger'),
    ...adminPaths(),
    ...operationsPaths(),
  };
}
