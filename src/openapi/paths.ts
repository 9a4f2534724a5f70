// Every route of src/app/routes.ts, src/admin/api.ts, src/admin/quality-api.ts, src/http/live.ts and
// src/admin/page.ts as an OpenAPI path item.
import { PATHS } from '../endpoints.js';
import type { ErrorCode } from '../errors.js';
import { QUARANTINE_EVENT_BYTES } from '../pipeline/batch.js';
import { MAX_SCHEMA_VIOLATIONS } from '../pipeline/plans.js';
import { REPLAY_MAX } from '../quality/replay.js';
import { ERROR_CODES, ref } from './schemas.js';
import { PAGE_ASSETS } from '../admin/page.js';
import { json, type HeaderSet, type Obj, operation, type OperationSpec, param } from './operations.js';

// ---------------------------------------------------------------------------------------------
// Ingestion

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

// ---------------------------------------------------------------------------------------------
// Admin API

interface AdminSpec {
  operationId: string;
  summary: string;
  description?: string;
  ids?: ('ProjectId' | 'BotId' | 'TokenId' | 'ErasureId' | 'UserId')[];
  /** Query parameters. */
  query?: Obj[];
  /** Component name of the JSON body. */
  body?: string;
  bodyRequired?: boolean;
  success: OperationSpec['success'];
  /** Codes beyond 401 (and 400/413 with a body, 404 with an id). */
  errors?: ErrorCode[];
  errorNotes?: OperationSpec['errorNotes'];
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
    parameters: [...(a.ids ?? []).map(param), ...(a.query ?? [])],
    ...(a.body === undefined ? {} : { requestBody: { required: a.bodyRequired ?? true, content: json(ref(a.body)) } }),
    success: a.success,
    errors: [...new Set(errors)],
    ...(a.errorNotes === undefined ? {} : { errorNotes: a.errorNotes }),
  });
}

const ok = (description: string, schema: Obj) => ({ description, content: json(schema) });
const list = (name: string): Obj => ({ type: 'array', items: ref(name) });
/** A report: JSON, or with `?format=csv` the same numbers as CSV. */
const okCsv = (description: string, schema: Obj) => ({
  description: `${description} With \`format=csv\`: the same numbers as \`text/csv\` (RFC 4180, a header line).`,
  content: { ...json(schema), 'text/csv': { schema: { type: 'string' } } },
});
const DATE_SCHEMA = { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'A date, YYYY-MM-DD.' };
function reportQuery(defaultDays: number | null): Obj[] {
  const dflt = defaultDays === null ? 'every day' : `the ${defaultDays} days ending today`;
  return [
    query('from', `First day (UTC), included. Without from and to: ${dflt}; at most 366 days per call.`, DATE_SCHEMA),
    query(
      'to',
      'Last day (UTC), included; default today. Before from, malformed, or a range over 366 days: 400.',
      DATE_SCHEMA,
    ),
    query('format', 'json (default) or csv.', { type: 'string', enum: ['json', 'csv'] }),
  ];
}

function adminPaths(): Record<string, Obj> {
  return {
    '/admin/projects': {
      post: adminOp({
        operationId: 'createProject',
        summary: 'Create a project',
        body: 'CreateProject',
        success: { 201: ok('Created; no eventAllowance (or null) is unlimited.', ref('ProjectCreated')) },
      }),
      get: adminOp({
        operationId: 'listProjects',
        summary: 'List projects',
        success: { 200: ok('Every project.', list('Project')) },
      }),
    },
    '/admin/projects/{projectId}': {
      get: adminOp({
        operationId: 'getProject',
        summary: 'Read a project',
        ids: ['ProjectId'],
        success: { 200: ok('The project.', ref('Project')) },
      }),
      patch: adminOp({
        operationId: 'patchProject',
        summary: 'Change a project or its allowance',
        ids: ['ProjectId'],
        body: 'PatchProject',
        success: { 200: ok('The changed project.', ref('Project')) },
      }),
    },
    '/admin/projects/{projectId}/usage': {
      get: adminOp({
        operationId: 'getProjectUsage',
        summary: "This calendar month's usage (UTC)",
        ids: ['ProjectId'],
        success: { 200: ok('Usage of the current month.', ref('Usage')) },
      }),
    },
    '/admin/projects/{projectId}/reports/daily': {
      get: adminOp({
        operationId: 'getDailyReport',
        summary: 'Events, active and new users per day',
        description:
          "From aggregates the service keeps as events are stored (REPORTS_LAG_MS behind, at most a minute by default), never from a scan of the events. A day is the UTC date of the events' `eventDate`; only stored events count (no redelivery, in-request duplicate or rejected event). `activeUsers`: distinct users with a stored event that day; `newUsers`: users whose earliest stored event falls on that day. Every day of the range is listed, zeros included.",
        ids: ['ProjectId'],
        query: reportQuery(30),
        errors: ['bad_request'],
        success: { 200: okCsv('One row per day, oldest first.', list('DailyReportRow')) },
      }),
    },
    '/admin/projects/{projectId}/reports/campaigns': {
      get: adminOp({
        operationId: 'getCampaignReport',
        summary: 'New users, active users, payers and net revenue per campaign (first touch)',
        description:
          "A user's campaign is the first start_param the service saw for them: `tg.start_param` of a bot_api event (the `/start` payload) or the `start_param` of a webapp session's signed initData. Users without one are under `null`. Over the range: `newUsers` whose earliest stored event falls in it, `activeUsers` with a stored event in it (distinct), `payers` with a payment in it, and net revenue (payments less refunds) per currency. Distinct users are exact while no day of the range has more than 512 users of the campaign and the range at most 8,192, estimated beyond (HyperLogLog, standard error 1.6%). Activity and payments count under the campaign known when they were folded: a user first seen without one counts under `null` until it arrives. Most new users first, `null` last.",
        ids: ['ProjectId'],
        query: [
          ...reportQuery(30),
          query(
            'limit',
            'Campaigns listed, those with the most new users first: 1–1000, default 100. The users without a campaign are listed besides.',
            {
              type: 'integer',
              minimum: 1,
              maximum: 10_000,
            },
          ),
        ],
        errors: ['bad_request'],
        success: { 200: okCsv('One row per campaign.', list('CampaignReportRow')) },
      }),
    },
    '/admin/projects/{projectId}/reports/revenue': {
      get: adminOp({
        operationId: 'getRevenueReport',
        summary: 'Revenue and refunds per currency',
        description:
          "Sums `tg.total_amount` of `successful_payment` events from the bot_api endpoint per `tg.currency`, in the currency's smallest units, and of `refunded_payment` events alike; each charge (`tg.telegram_payment_charge_id`, else `tg.provider_payment_charge_id`) counts once, however often and by whichever connection it was reported. Stars (XTR) have no minor unit: their amounts are whole stars. Without `from` and `to`: every day; `by=day` adds a series per currency (30 days ending today by default). From the aggregates, like the daily report.",
        ids: ['ProjectId'],
        query: [
          ...reportQuery(null),
          query('by', 'day: each currency also lists every day of the range.', { type: 'string', enum: ['day'] }),
        ],
        errors: ['bad_request'],
        success: { 200: okCsv('One line per currency.', list('RevenueLine')) },
      }),
    },
    '/admin/projects/{projectId}/stats': {
      get: adminOp({
        operationId: 'getProjectStats',
        summary: "This instance's live counts",
        ids: ['ProjectId'],
        success: { 200: ok('The last 60 minutes and totals since start.', ref('ProjectStats')) },
      }),
    },
    '/admin/projects/{projectId}/bots': {
      get: adminOp({
        operationId: 'listProjectBots',
        summary: "A project's bots",
        ids: ['ProjectId'],
        success: { 200: ok('Bots linked to the project.', list('Bot')) },
      }),
    },
    '/admin/bots': {
      post: adminOp({
        operationId: 'createBot',
        summary: 'Create a bot',
        description: 'Both switches (`miniAppIngest`, `apiIngest`) start on. An unknown `projectId` is 404.',
        body: 'CreateBot',
        bodyRequired: false,
        errors: ['not_found', 'messenger_bot_id_taken'],
        success: { 201: ok('Created.', ref('BotCreated')) },
      }),
      get: adminOp({ operationId: 'listBots', summary: 'List bots', success: { 200: ok('Every bot.', list('Bot')) } }),
    },
    '/admin/bots/{botId}': {
      get: adminOp({
        operationId: 'getBot',
        summary: 'Read a bot',
        ids: ['BotId'],
        success: { 200: ok('The bot.', ref('Bot')) },
      }),
      patch: adminOp({
        operationId: 'patchBot',
        summary: 'Change a bot',
        description: 'An unknown bot or `projectId` is 404.',
        ids: ['BotId'],
        body: 'PatchBot',
        errors: ['messenger_bot_id_taken'],
        success: { 200: ok('The changed bot.', ref('Bot')) },
      }),
    },
    '/admin/bots/{botId}/tokens': {
      post: adminOp({
        operationId: 'createToken',
        summary: 'Issue an API token for the bot_api endpoint',
        ids: ['BotId'],
        success: { 201: ok('The token; its value is shown this once.', ref('TokenCreated')) },
      }),
      get: adminOp({
        operationId: 'listTokens',
        summary: "A bot's tokens",
        ids: ['BotId'],
        success: { 200: ok('Tokens without their values.', list('TokenSummary')) },
      }),
    },
    '/admin/tokens/{tokenId}': {
      delete: adminOp({
        operationId: 'revokeToken',
        summary: 'Revoke a token',
        description:
          'Refused at once on this instance, within 2 × `AUTH_CACHE_TTL_MS` on others. Revoking twice keeps the first time.',
        ids: ['TokenId'],
        success: { 204: { description: 'Revoked.' } },
      }),
      patch: adminOp({
        operationId: 'patchToken',
        summary: "Set a token's rate limit",
        description:
          "Raises or lowers one token's bucket on the bot_api endpoint (a heavy tenant, a benchmark) without changing the service's defaults. In force at once on this instance, within 2 × `AUTH_CACHE_TTL_MS` on others.",
        ids: ['TokenId'],
        body: 'PatchToken',
        success: { 200: ok('The token, without its value.', ref('TokenSummary')) },
      }),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Event quality: tracking plans, the quarantine and replay (src/admin/quality-api.ts)

const query = (name: string, description: string, schema: Obj): Obj => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const codeQuery = (what: string): Obj =>
  query(
    'code',
    `Only entries with an error of this diagnostic code (${what}); not a code's shape (\`^[a-z_]{1,64}$\`): 400.`,
    { type: 'string', pattern: '^[a-z_]{1,64}$' },
  );

function qualityPaths(): Record<string, Obj> {
  const ids: AdminSpec['ids'] = ['ProjectId'];
  return {
    '/admin/projects/{projectId}/tracking-plan': {
      put: adminOp({
        operationId: 'putTrackingPlan',
        summary: "Set the project's tracking plan",
        description: [
          'Replaces the plan; its `version` goes up by one. Every schema is compiled first (JSON Schema draft 2020-12, unknown keywords refused): one that does not compile is 400 `bad_request` with `details: {eventName, error}`, and the plan in force stays.',
          'A body over 256 KiB is 400 `bad_request` with `details: {maxBytes}` (over 1 MiB, 413). The plan is in force at once on this instance and within 2 × `AUTH_CACHE_TTL_MS` on the others; events already stored are not checked again.',
        ].join('\n\n'),
        ids,
        body: 'TrackingPlan',
        success: { 200: ok('The plan in force, with its version.', ref('StoredTrackingPlan')) },
        errorNotes: {
          400: 'Not a plan, a schema that does not compile (`details: {eventName, error}`), or over 256 KiB (`details: {maxBytes}`).',
          413: 'Over 1 MiB.',
        },
      }),
      get: adminOp({
        operationId: 'getTrackingPlan',
        summary: "Read the project's tracking plan",
        ids,
        success: { 200: ok('The plan in force.', ref('StoredTrackingPlan')) },
        description: 'An unknown project, or one without a plan, is 404.',
        errorNotes: { 404: 'No such project, or it has no plan.' },
      }),
      delete: adminOp({
        operationId: 'deleteTrackingPlan',
        summary: "Remove the project's tracking plan",
        description:
          'Events are no longer checked against a plan (on other instances within 2 × `AUTH_CACHE_TTL_MS`). Removing a plan that is not there is 204 too; the next plan gets the next version.',
        ids,
        success: { 204: { description: 'No plan in force.' } },
      }),
    },
    '/admin/projects/{projectId}/quarantine': {
      get: adminOp({
        operationId: 'listQuarantine',
        summary: 'List quarantined events, newest first',
        description:
          'Events rejected with an error after authentication, on either endpoint, with their diagnostics and the event as sent. Pages of `limit`; pass `next` as `before` for the next page.',
        ids,
        errors: ['bad_request'],
        errorNotes: { 400: 'A `code`, `limit` or `before` out of shape.' },
        query: [
          codeQuery('e.g. `schema_violation`'),
          query('limit', 'Entries per page, 1 to 1000 (default 100); anything else: 400.', {
            type: 'integer',
            minimum: 1,
            maximum: 1000,
            default: 100,
          }),
          query(
            'before',
            'The `next` of the page before: only entries with a smaller `id`. Not a positive integer: 400.',
            { type: 'integer', minimum: 1 },
          ),
        ],
        success: { 200: ok('One page.', ref('QuarantinePage')) },
      }),
      delete: adminOp({
        operationId: 'clearQuarantine',
        summary: 'Delete quarantined events',
        description:
          "All of the project's entries, or those with an error of `code`. They cannot be replayed afterwards.",
        ids,
        errors: ['bad_request'],
        errorNotes: { 400: 'A `code` out of shape.' },
        query: [codeQuery('all when absent')],
        success: { 204: { description: 'Deleted.' } },
      }),
    },
    '/admin/projects/{projectId}/quarantine/summary': {
      get: adminOp({
        operationId: 'getQuarantineSummary',
        summary: 'Quarantined events per error code',
        ids,
        success: { 200: ok('Most frequent first; empty when the quarantine is.', list('QuarantineCount')) },
      }),
    },
    '/admin/projects/{projectId}/quarantine/replay': {
      post: adminOp({
        operationId: 'replayQuarantine',
        summary: 'Replay quarantined events through the current pipeline and plan',
        description: [
          `Takes the chosen entries (oldest first, at most ${REPLAY_MAX} per call; call again for more) and runs each as if it arrived now on its original endpoint and connection (token or bot), under the tracking plan in force.`,
          'Events that pass are stored, billed by the usual rules (deduplicated by eventId) and leave the quarantine; events whose eventId is stored already count as `duplicated` and leave too; the others stay, with the diagnostics of this replay. An entry cut to its first 64 KiB always stays rejected.',
          '`dryRun: true` answers the counts a replay would and changes nothing (it does not look at the allowance).',
          'Replayed events count against the allowance like any others: 402 `allowance_exhausted` when it is used up. Should it run out during the call, the answer is 402 too: the events stored until then have left the quarantine, the others stay for the next replay.',
        ].join('\n\n'),
        ids,
        body: 'ReplayRequest',
        bodyRequired: false,
        errors: ['allowance_exhausted', 'unavailable', 'overloaded'],
        errorNotes: {
          402: "The project's allowance for this month is used up.",
          503: 'The allowance could not be read, or the writer is busy; retry after Retry-After (stored events are recognised).',
        },
        success: { 200: ok('What became of the chosen entries.', ref('ReplayResult')) },
      }),
    },
  };
}

function privacyPaths(): Record<string, Obj> {
  const limit = query('limit', 'Entries per page, 1 to 1000 (default 100); anything else: 400.', {
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    default: 100,
  });
  return {
    '/admin/projects/{projectId}/erasures': {
      post: adminOp({
        operationId: 'requestErasure',
        summary: "Erase users' data (and optionally keep it from coming back)",
        description: [
          "Removes, in the background, every row that names the users: their events in every monthly partition, their profile and first/last seen (users), the quarantined events they sent or that name them in their body, and their rows in the report tables (first day and campaign, active days; payments stay counted without the user). Counts already made stay: this month's usage (a ledger) and the report aggregates (numbers, not people). Ingestion never waits on it: it runs in transactions of bounded size, one instance at a time, and resumes after a restart.",
          '`suppress: true` also drops their later events on both endpoints before storage (`user_suppressed`), on every instance within 2 × AUTH_CACHE_TTL_MS, until lifted; the erasure then starts reading the events only once that time and WRITE_TIMEOUT_MS have passed, so that nothing of theirs lands behind it. Events stored while an erasure without suppress runs may outlive it.',
          'A step that fails (a lock held long, the database away) is retried, backing off from 2 to 32 s; six failures in a row mark the erasure `failed` (`error` says why); request it again to finish it.',
          'The erasure record keeps the ids while it runs and, once done, only those still suppressed; otherwise their count and SHA-256 digest.',
        ].join('\n\n'),
        ids: ['ProjectId'],
        body: 'ErasureRequest',
        success: { 202: ok('Accepted; poll it by `erasureId`.', ref('Erasure')) },
      }),
      get: adminOp({
        operationId: 'listErasures',
        summary: 'Erasure requests, newest first',
        ids: ['ProjectId'],
        errors: ['bad_request'],
        query: [
          query('limit', 'Entries per page, 1 to 1000, served up to 100 (default 100); anything else: 400.', {
            type: 'integer',
            minimum: 1,
            maximum: 1000,
            default: 100,
          }),
          query('before', 'The `next` of the page before; anything else: 400.', { type: 'string' }),
        ],
        success: { 200: ok('One page.', ref('ErasurePage')) },
      }),
    },
    '/admin/projects/{projectId}/erasures/{erasureId}': {
      get: adminOp({
        operationId: 'getErasure',
        summary: 'An erasure request and its progress',
        ids: ['ProjectId', 'ErasureId'],
        success: { 200: ok('The erasure.', ref('Erasure')) },
      }),
    },
    '/admin/projects/{projectId}/suppressions': {
      get: adminOp({
        operationId: 'listSuppressions',
        summary: 'Suppressed users, by id',
        ids: ['ProjectId'],
        errors: ['bad_request'],
        query: [limit, query('after', 'The `next` of the page before: ids above it.', { type: 'string' })],
        success: { 200: ok('One page.', ref('SuppressionPage')) },
      }),
    },
    '/admin/projects/{projectId}/suppressions/{userId}': {
      delete: adminOp({
        operationId: 'liftSuppression',
        summary: "Lift a user's suppression",
        description:
          'Their events are stored again on every instance within 2 × AUTH_CACHE_TTL_MS. The erasure that suppressed them no longer keeps their id once it is done.',
        ids: ['ProjectId', 'UserId'],
        errors: ['bad_request'],
        success: { 204: { description: 'Lifted.' } },
      }),
    },
    '/admin/projects/{projectId}/users/{userId}/export': {
      get: adminOp({
        operationId: 'exportUser',
        summary: 'Everything held on a user, as NDJSON',
        description:
          'One JSON object per line, `{type, data}`, sent as it is read: `profile` (the users row), `campaign` (first day, first and latest campaign), `suppression`, one `active_day` per day they were active and one `payment` per payment in the report tables, one `billing_key` per message in their private chat the billing ledger keeps, one `event` per stored event of every partition (the row as stored), one `quarantined` per quarantined event they sent or that names them, and last `end` with the count of each. A response without its `end` line was cut short (an export is cut after 10 minutes). At most 2 run at once per instance: 503 `overloaded` with Retry-After beyond.',
        ids: ['ProjectId', 'UserId'],
        errors: ['bad_request', 'overloaded'],
        success: {
          200: {
            description: 'NDJSON.',
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
        },
      }),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The live view (src/http/live.ts): a WebSocket

function livePath(): Obj {
  return {
    get: operation({
      operationId: 'liveView',
      summary: "Watch a project's events as they are answered (WebSocket)",
      description: [
        'A WebSocket (RFC 6455): send `GET /admin/live?projectId=<uuid>` with the upgrade headers; the answer is `101 Switching Protocols`, or `400 bad_request` when `projectId` is not a UUID. Without the upgrade headers the path answers 404. The project is not looked up: an unknown one simply has no events. These two answers come from the WebSocket library and carry no X-Request-Id.',
        'The admin token is never put in the URL: the client\'s first message is `{"token": "<ADMIN_TOKEN>"}` (`LiveSignIn`), within 5 s. A wrong or missing token closes the socket with code 4001 (`admin_unauthorized`), or 4029 (`auth_rate_limited`) once the address is past `ADMIN_AUTH_FAILURES_PER_MIN`, the budget it shares with the admin API.',
        'Then the server sends `{"type": "ready", "projectId", "perSecond"}` and one JSON message per event of the project that this instance answers (`LiveMessage`): `{eventId, eventName, eventType, channel, botId, receivedAt, status, diagnostics, event, skipped}`, where `status` is `accepted`, `rejected` or `duplicated`, `event` is the event as sent, and `skipped` counts the events not sent to this viewer since the message before.',
        'Each viewer gets at most `LIVE_MESSAGES_PER_S` messages a second (a burst of as many, then a steady rate); a viewer that does not read fast enough has messages skipped rather than queued. Each instance shows only the events it answers itself: behind a load balancer, watch every instance. Events replayed from the quarantine are not shown. Messages from the client after the token are ignored.',
      ].join('\n\n'),
      tags: ['admin'],
      parameters: [
        {
          name: 'projectId',
          in: 'query',
          required: true,
          description: 'The project to watch, a UUID; anything else: 400.',
          schema: { type: 'string', format: 'uuid' },
        },
        {
          name: 'Upgrade',
          in: 'header',
          required: true,
          description: '`websocket`; without the upgrade headers the path answers 404.',
          schema: { type: 'string' },
        },
        {
          name: 'Sec-WebSocket-Key',
          in: 'header',
          required: true,
          description: 'A random 16-byte value in base64 (RFC 6455).',
          schema: { type: 'string' },
        },
        {
          name: 'Sec-WebSocket-Version',
          in: 'header',
          required: true,
          description: '`13`.',
          schema: { type: 'string', const: '13' },
        },
      ],
      success: {
        101: {
          description:
            'Switching Protocols: the WebSocket is open. Send `LiveSignIn` first; then `LiveMessage`s arrive.',
          headers: { Upgrade: 'required', Connection: 'required', 'Sec-WebSocket-Accept': 'required' },
        },
      },
      errors: ['bad_request', 'not_found'],
      errorNotes: {
        400: '`projectId` is not a UUID (no X-Request-Id).',
        404: 'Not an upgrade request (no `Upgrade: websocket` and `Sec-WebSocket-Key`).',
      },
      bareStatuses: [101, 400],
      extensions: {
        'x-websocket': {
          clientMessages: ref('LiveSignIn'),
          serverMessages: ref('LiveMessage'),
          closeCodes: {
            4001: 'admin_unauthorized: no valid token in the first message (or none within 5 s)',
            4029: 'auth_rate_limited: too many wrong tokens from this address',
          },
        },
      },
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// Operations

/** The admin page's files under /admin/page/ (src/admin/page.ts) and their media types. */

function operationsPaths(): Record<string, Obj> {
  const get = (spec: Omit<OperationSpec, 'tags' | 'errors'> & { errors?: ErrorCode[] }): Obj => ({
    get: operation({ tags: ['operations'], errors: [], ...spec }),
  });
  const page = (operationId: string): Obj =>
    get({
      operationId,
      summary: 'The admin web page',
      description: 'Static, the same at /admin and /admin/; it calls the admin API with the token the user enters.',
      success: { 200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } } },
    });
  return {
    '/admin/': page('adminPage'),
    '/admin': page('adminPageNoSlash'),
    '/admin/page/{file}': get({
      operationId: 'adminPageAsset',
      summary: "The admin page's static files",
      parameters: [
        { name: 'file', in: 'path', required: true, schema: { type: 'string', enum: Object.keys(PAGE_ASSETS) } },
      ],
      success: {
        200: {
          description: 'The file.',
          content: Object.fromEntries(
            Object.values(PAGE_ASSETS).map((type) => [type.split(';')[0]!, { schema: { type: 'string' } }]),
          ),
        },
      },
    }),
    '/': get({
      operationId: 'root',
      summary: 'Where to go from the bare address',
      success: {
        200: ok('Pointers to the admin page, this document, the ingestion endpoints and the docs.', {
          type: 'object',
          required: ['service', 'adminPage', 'openapi', 'ingestion', 'docs'],
          properties: {
            service: { type: 'string', const: 'tg-ingest' },
            adminPage: { type: 'string' },
            openapi: { type: 'string' },
            ingestion: { type: 'object' },
            docs: { type: 'string' },
          },
        }),
      },
    }),
    '/healthz': get({
      operationId: 'healthz',
      summary: 'Liveness',
      success: { 200: ok('The process is up.', ref('Health')) },
    }),
    '/readyz': get({
      operationId: 'readyz',
      summary: 'Readiness',
      success: {
        200: ok('The database answers and migrations are done.', ref('Readiness')),
        503: {
          description:
            'Not ready: shutting down, migrations pending, or the database unreachable (then with Retry-After).',
          content: json(ref('Readiness')),
          headers: { 'Retry-After': 'optional' },
        },
      },
    }),
    '/metrics': get({
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description:
        'On the main listener it needs the admin token (`Authorization: Bearer`, as Prometheus sends it); with `ADMIN_PORT` it is served on the admin listener without one.',
      errors: ['admin_unauthorized', 'auth_rate_limited', 'internal'],
      success: {
        200: {
          description: 'Prometheus text exposition format 0.0.4.',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    }),
    '/openapi.json': get({
      operationId: 'openapi',
      summary: 'This document',
      success: {
        200: ok('The OpenAPI 3.1 document.', {
          type: 'object',
          required: ['openapi', 'info', 'paths'],
          properties: {
            openapi: { type: 'string', pattern: '^3\\.1\\.' },
            info: { type: 'object' },
            paths: { type: 'object' },
          },
        }),
      },
    }),
  };
}

export function paths(): Record<string, Obj> {
  return {
    '/tg': botApiOperation('/tg', 'postServerEvents'),
    '/messenger': botApiOperation('/messenger', 'postServerEventsMessenger'),
    '/tg/webapp': webappOperation('/tg/webapp', ''),
    '/messenger/webapp': webappOperation('/messenger/webapp', 'Messenger'),
    ...adminPaths(),
    ...qualityPaths(),
    ...privacyPaths(),
    [PATHS.adminLive]: livePath(),
    ...operationsPaths(),
  };
}
