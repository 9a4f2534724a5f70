// The ingestion endpoints on the public listener, each with its OpenAPI operations: bot_api (`POST /tg`, alias
// `/messenger`) and webapp (`POST /tg/webapp`, alias `/messenger/webapp`, with its CORS preflight).
import { PATHS } from '../../base/endpoints.js';
import type { ErrorCode } from '../../base/errors.js';
import { corsPreflight } from '../../http/cors.js';
import type { Route } from '../../http/route.js';
import type { Handler, RouteOptions } from '../../http/server.js';
import { json, type HeaderSet, type Obj, operation, type OperationSpec, param } from '../../openapi/operations.js';
import { ERROR_CODES, ref } from '../../openapi/schemas.js';
import { QUARANTINE_EVENT_BYTES } from '../../pipeline/batch.js';
import { MAX_SCHEMA_VIOLATIONS } from '../../pipeline/plans.js';

const BODY_ERRORS: ErrorCode[] = [
  'invalid_json',
  'invalid_utf8',
  'invalid_body',
  'events_invalid',
  'invalid_gzip',
  'payload_too_large',
];
const HEADER_ERRORS: ErrorCode[] = ['unsupported_media_type', 'unsupported_encoding', 'method_not_allowed'];
const SERVICE_ERRORS: ErrorCode[] = [
  'rate_limited',
  'auth_rate_limited',
  'internal',
  'overloaded',
  'unavailable',
  'shutting_down',
];
const INITDATA_ERRORS = ERROR_CODES.filter((c) => c.startsWith('initdata_'));

const accepted = {
  description: 'The events are committed to PostgreSQL; the body counts them and lists diagnostics.',
  content: json(ref('IngestionResponse')),
};

const RETRY =
  'Retry only 429 and 503 (webapp: 408, 429 and 5xx), honouring Retry-After, with the same eventIds: stored events are recognised and neither stored nor billed twice.';

const QUALITY = [
  `When the project has a tracking plan, each event that passes the checks is then validated against the plan's schema for its name: \`schema_violation\` (at most ${MAX_SCHEMA_VIOLATIONS} per event) and \`event_unplanned\` are warnings or errors as the plan says (modes \`warn\`/\`block\`, \`unplannedEvents\` \`allow\`/\`warn\`/\`block\`).`,
  `Every event rejected with an error is kept in the project's quarantine (committed with the accepted rows; over ${QUARANTINE_EVENT_BYTES / 1024} KiB of JSON, only its beginning), not billed, and can be replayed with the admin API once fixed. A request refused whole (an error code) keeps nothing.`,
].join(' ');

/**
 * Every answer of the bot_api endpoint once its token is known carries them; none before (a 401 or 415 touched no
 * bucket).
 */
function rateLimitHeaders(status: number): HeaderSet {
  if (status === 401 || status === 405 || status === 415) return {};
  const presence = status === 202 || status === 402 || status === 403 ? 'required' : 'optional';
  return { 'RateLimit-Limit': presence, 'RateLimit-Remaining': presence, 'RateLimit-Reset': presence };
}

const corsHeaders = (): HeaderSet => ({
  'Access-Control-Allow-Origin': 'optional',
  'Access-Control-Expose-Headers': 'optional',
  Vary: 'optional',
});

function botApiOperation(path: string, operationId: string): Obj {
  const spec: OperationSpec = {
    operationId,
    summary:
      path === '/tg'
        ? 'Ingest events from a bot backend (bot_api endpoint)'
        : 'Ingest events from a bot backend (bot_api endpoint; alias of POST /tg)',
    description: [
      'Authenticated by a per-bot token in `X-API-Key`; the token decides bot and project.',
      "Checks in this order: Content-Type (JSON or absent) and Content-Encoding (415), the key (401; a key that must be looked up is answered 429 `auth_rate_limited` to an address past its budget of failed lookups), the token bucket (429), the bot's switches (403), the allowance (402, 503), the body (400, 413 past `MAX_BODY_BYTES`, also once decompressed), then each event.",
      'RateLimit-* headers come with every answer once the token is known (not with a 401 or 415, which touched no bucket).',
      QUALITY,
      RETRY,
    ].join('\n\n'),
    tags: ['ingestion'],
    security: 'ApiKey',
    parameters: [param('ContentEncoding')],
    requestBody: { required: true, content: json(ref('ServerRequest')) },
    success: { 202: accepted },
    errors: [
      ...BODY_ERRORS,
      'unsupported_version',
      'event_invalid',
      'too_many_profiles',
      'storage_refused',
      'api_key_missing',
      'api_key_invalid',
      'allowance_exhausted',
      'api_ingest_disabled',
      'bot_not_linked',
      ...HEADER_ERRORS,
      ...SERVICE_ERRORS,
    ],
    rejectedBatchIs400: true,
    allow: 'POST',
    headers: rateLimitHeaders,
  };
  return { post: operation(spec) };
}

function webappOperation(path: string, idSuffix: string): Obj {
  const alias = path === '/tg/webapp' ? '' : '; alias of POST /tg/webapp';
  const post: OperationSpec = {
    operationId: `postWebappEvents${idSuffix}`,
    summary: `Ingest events from mini-app code (webapp endpoint${alias})`,
    description: [
      'The user is identified by `auth.initData`, signed by the messenger with Ed25519; no secret is involved, so this is the endpoint for client code.',
      "Content-Type JSON, `text/plain` (no CORS preflight) or absent. Checks in this order: the body (400; 413 past `WEBAPP_MAX_BODY_BYTES`, also once decompressed), `botId` (400, 401, 409), initData (401; 429 `auth_rate_limited` once the client address or the bot is past its budget of failed checks), the bot's settings (409), the token bucket of (bot, user) (429), the allowance (402, 503), then each event.",
      QUALITY,
      RETRY,
    ].join('\n\n'),
    tags: ['ingestion'],
    parameters: [param('ContentEncoding')],
    requestBody: {
      required: true,
      content: { ...json(ref('WebappRequest')), 'text/plain': { schema: ref('WebappRequest') } },
    },
    success: { 202: accepted },
    errors: [
      ...BODY_ERRORS,
      'bot_id_invalid',
      'bot_unknown',
      'storage_refused',
      ...INITDATA_ERRORS,
      'allowance_exhausted',
      'webapp_bot_not_linked',
      'webapp_bot_not_configured',
      'miniapp_ingest_disabled',
      ...HEADER_ERRORS,
      ...SERVICE_ERRORS,
    ],
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
        headers: {
          'Access-Control-Allow-Methods': 'required',
          'Access-Control-Allow-Headers': 'required',
          'Access-Control-Max-Age': 'required',
        },
      },
    },
    errors: [],
    headers: corsHeaders,
  };
  return { post: operation(post), options: operation(options) };
}

const methodNotAllowed =
  (allow: string): Handler =>
  () => ({ status: 405, headers: { Allow: allow }, body: { error: 'method_not_allowed', message: `Use ${allow}.` } });

export interface IngestionHandlers {
  botApi: Handler;
  webapp: Handler;
  shedBotApi: NonNullable<RouteOptions['shed']>;
  shedWebapp: NonNullable<RouteOptions['shed']>;
  webappMaxBodyBytes: number;
}

const BOT_API_IDS: Record<string, string> = { '/tg': 'postServerEvents', '/messenger': 'postServerEventsMessenger' };
const WEBAPP_IDS: Record<string, string> = { '/tg/webapp': '', '/messenger/webapp': 'Messenger' };

export function ingestionRoutes(h: IngestionHandlers): Route[] {
  const routes: Route[] = [];
  const on = { listener: 'public' } as const;
  for (const path of PATHS.bot_api) {
    const { post } = botApiOperation(path, BOT_API_IDS[path]!) as { post: Obj };
    routes.push(
      { method: 'post', path, handler: h.botApi, options: { shed: h.shedBotApi }, operation: post, ...on },
      { method: 'any', path, handler: methodNotAllowed('POST'), ...on },
    );
  }
  for (const path of PATHS.webapp) {
    const { post, options } = webappOperation(path, WEBAPP_IDS[path]!) as { post: Obj; options: Obj };
    routes.push(
      {
        method: 'post',
        path,
        handler: h.webapp,
        options: { maxBodyBytes: h.webappMaxBodyBytes, shed: h.shedWebapp },
        operation: post,
        ...on,
      },
      { method: 'options', path, handler: corsPreflight(), operation: options, ...on },
      { method: 'any', path, handler: methodNotAllowed('POST, OPTIONS'), ...on },
    );
  }
  return routes;
}
