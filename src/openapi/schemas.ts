// JSON Schema 2020-12 component schemas of the OpenAPI document. The enums of error and diagnostic
// codes are read from their tables (src/errors.ts, src/pipeline/diagnostics.ts), the limits and
// patterns from the pipeline's own constants, so the document follows the code when either changes.
import { ERRORS, type ErrorCode } from '../errors.js';
import { MAX_EVENTS } from '../pipeline/batch.js';
import { DIAGNOSTICS, MAX_DIAGNOSTICS, type DiagnosticCode, type Severity } from '../pipeline/diagnostics.js';
import { EVENT_TYPES, LIMITS, PROP_KEY } from '../pipeline/event.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...extra,
});
/** A response object the service builds itself: closed, so a new field is a documented change. */
const closed = (properties: Record<string, Schema>, required = Object.keys(properties), description?: string): Schema => ({
  ...(description === undefined ? {} : { description }), ...obj(properties, required), additionalProperties: false,
});
const count = (description: string): Schema => ({ type: 'integer', minimum: 0, description });
const instant = { type: 'string', format: 'date-time' };
const uuid = { type: 'string', format: 'uuid' };

// ---------------------------------------------------------------------------------------------
// Error and diagnostic codes, from their tables.

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];
export const DIAGNOSTIC_CODES = Object.keys(DIAGNOSTICS) as DiagnosticCode[];
export const SEVERITIES = [...new Set(DIAGNOSTIC_CODES.map((c) => DIAGNOSTICS[c].severity))].sort() as Severity[];

/** Every HTTP status of the error table, ascending. */
export const ERROR_STATUSES = [...new Set(ERROR_CODES.map((c) => ERRORS[c].status as number))].sort((a, b) => a - b);

export const codesWithStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => ERRORS[c].status === status);

/** Component name of the error body narrowed to one status. */
export const errorSchemaName = (status: number): string => `Error${status}`;

const errorList = (codes: readonly ErrorCode[]): string =>
  codes.map((c) => `- \`${c}\` (${ERRORS[c].status}): ${ERRORS[c].message}`).join('\n');

function errorBody(codes: readonly ErrorCode[], title: string): Schema {
  return closed({
    error: { type: 'string', enum: [...codes], description: `Machine code:\n\n${errorList(codes)}` },
    message: { type: 'string', description: 'Human-readable reason; may be more specific than the default message above.' },
    details: { type: 'object', description: 'Where useful, e.g. `{index, field}` for `event_invalid`, `{maxBytes}` for `payload_too_large`, `{errors}` (ajv) for `bad_request`.' },
  }, ['error', 'message'], title);
}

function errorSchemas(): Record<string, Schema> {
  const out: Record<string, Schema> = { ErrorBody: errorBody(ERROR_CODES, 'Every error other than "every event rejected".') };
  for (const status of ERROR_STATUSES) out[errorSchemaName(status)] = errorBody(codesWithStatus(status), `The error body of a ${status}.`);
  return out;
}

function diagnosticSchemas(): Record<string, Schema> {
  // Each code has one severity: stated in the schema, so a response pairing them otherwise is invalid.
  const severityOfCode = SEVERITIES.map((s) => ({
    if: { properties: { code: { enum: DIAGNOSTIC_CODES.filter((c) => DIAGNOSTICS[c].severity === s) } } },
    then: { properties: { severity: { const: s } } },
  }));
  return {
    DiagnosticCode: {
      type: 'string',
      enum: DIAGNOSTIC_CODES,
      description: `Machine code of a diagnostic:\n\n${DIAGNOSTIC_CODES.map((c) => `- \`${c}\` (${DIAGNOSTICS[c].severity}): ${DIAGNOSTICS[c].description}`).join('\n')}`,
    },
    Severity: { type: 'string', enum: SEVERITIES, description: '`warning`: the event was repaired and stored (counts in `accepted`); `error`: it was dropped (counts in `rejected`).' },
    Diagnostic: {
      ...closed({
        event_id: { type: ['string', 'null'], description: 'The eventId as sent (cut when long); null when the event has no string eventId or the item is not an event (`users[i]`, `bot`).' },
        code: ref('DiagnosticCode'),
        severity: ref('Severity'),
        path: { type: 'string', description: 'The field or property concerned, snake_case: `platform_user_id`, `props_string.<key>`, `users[3]`.' },
        message: { type: 'string' },
      }),
      allOf: severityOfCode,
    },
    IngestionResponse: closed({
      accepted: count('Events ingested (possibly repaired, see warnings); includes events already stored by an earlier request.'),
      rejected: count('Events dropped; each has at least one diagnostic of severity `error`.'),
      not_consumed_duplicated: count('Repeats of an earlier eventId within this request.'),
      stored_not_billed: count('Events stored but not charged: another connection reported the same messenger action first.'),
      diagnostics_truncated: { type: 'boolean', description: `True when there were more than ${MAX_DIAGNOSTICS} diagnostics.` },
      diagnostics: { type: 'array', maxItems: MAX_DIAGNOSTICS, items: ref('Diagnostic') },
    }, undefined, '`accepted + rejected + not_consumed_duplicated` equals the number of events sent.'),
  };
}

// ---------------------------------------------------------------------------------------------
// Request bodies of the ingestion endpoints.

const USER_ID_PATTERN = '^[1-9][0-9]{0,18}$';
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function eventSchemas(): Record<string, Schema> {
  const keys = { propertyNames: { pattern: PROP_KEY.source } };
  const bucket = (values: Schema, description: string): Schema => ({ type: 'object', ...keys, additionalProperties: values, description });
  const common: Record<string, Schema> = {
    eventId: { ...uuid, description: 'Deduplication key, compared case-insensitively; an event already stored for the project counts as accepted and is not stored or billed again.' },
    eventName: { type: 'string', minLength: 1, description: `Longer than ${LIMITS.eventNameChars} characters: truncated with a warning.` },
    eventDate: {
      type: 'string',
      description: 'ISO 8601 date-time, years 0001–9999, fractions to microseconds; no offset means UTC.',
      examples: ['2026-01-31T12:00:00Z', '2026-01-31T15:00:00.123456+03:00'],
    },
    eventType: ref('EventType'),
    text: { type: 'string', description: `Longer than ${LIMITS.textChars} characters: truncated with a warning; not a string: dropped with a warning.` },
    propsString: bucket({ type: 'string' }, `String properties; values longer than ${LIMITS.stringValueChars} characters are truncated with a warning.`),
    propsLong: bucket({ type: 'integer', minimum: -MAX_SAFE, maximum: MAX_SAFE }, 'Integer properties.'),
    propsBool: bucket({ type: 'boolean' }, 'Boolean properties.'),
  };
  const propsNote = `Property keys match \`${PROP_KEY.source}\`; keys starting with \`$\` are reserved and dropped with a warning; at most ${LIMITS.propsPerEvent} properties per event, the surplus is dropped. Other fields (\`projectId\`, \`botId\`, ...) are ignored.`;
  return {
    EventType: {
      description: 'One of the nine categories; any other string is stored as `platform` with an `event_type_unknown` warning.',
      anyOf: [{ type: 'string', enum: [...EVENT_TYPES] }, { type: 'string' }],
    },
    MessengerId: { description: 'A positive 64-bit integer, as a JSON number or a digit string.', anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: USER_ID_PATTERN }] },
    ServerEvent: {
      description: `An event on the bot_api endpoint. A missing eventId, eventDate, eventType or eventOrigin (or one that is not a string) makes the whole request 400 \`event_invalid\`; other faults reject or repair the event alone. ${propsNote}`,
      ...obj({
        ...common,
        platformUserId: { type: 'string', pattern: USER_ID_PATTERN, description: "The messenger user's id as a string (positive int64)." },
        eventOrigin: { type: 'string', enum: ['platform', 'custom'], description: '`platform`: `tg.<field>` keys of the canonical registry are promoted; `custom`: stored as given.' },
        propsFloat: bucket({ type: 'number' }, 'Fractional properties (finite numbers).'),
      }, ['eventId', 'eventName', 'eventDate', 'eventType', 'eventOrigin', 'platformUserId']),
    },
    WebappEvent: {
      description: `An event on the webapp endpoint. The user is initData's \`user.id\`, the origin \`custom\`; \`platformUserId\`, \`eventOrigin\` and \`propsFloat\` are ignored if sent. A missing eventType is stored as \`platform\` with a warning; a missing eventId, eventName or eventDate rejects the event. ${propsNote}`,
      ...obj(common, ['eventId', 'eventName', 'eventDate']),
    },
    UserProfile: {
      description: 'A profile on the bot_api endpoint. Fields sent are updated, fields not sent are kept; `null` clears. An invalid item is skipped with a `user_profile_invalid` warning.',
      ...obj({
        messengerUserId: ref('MessengerId'),
        username: { type: ['string', 'null'], maxLength: 256 },
        firstName: { type: ['string', 'null'], maxLength: 256 },
        lastName: { type: ['string', 'null'], maxLength: 256 },
        languageCode: { type: ['string', 'null'], maxLength: 256 },
        isPremium: { type: ['boolean', 'null'] },
      }, ['messengerUserId']),
    },
    BotSnapshot: {
      description: "Updates the bot's snapshot; `messengerBotId` fills in the bot's messenger id only when none is configured. Invalid: ignored with a `bot_snapshot_invalid` warning.",
      ...obj({
        messengerBotId: nullable(ref('MessengerId')),
        name: { type: ['string', 'null'], maxLength: 256 },
        description: { type: ['string', 'null'], description: 'Truncated at 4096 characters.' },
        starsAmount: { type: ['number', 'null'] },
      }),
    },
    ServerRequest: obj({
      events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS, items: ref('ServerEvent') },
      users: { type: ['array', 'null'], items: ref('UserProfile'), description: 'Profiles of people in this batch; free of charge.' },
      bot: nullable(ref('BotSnapshot')),
      version: { type: 'string', const: '1', description: 'Omit it; any other value (null included) is 400 `unsupported_version`.' },
    }, ['events'], { description: 'A `projectId` or `botId` here is ignored: the token decides both.' }),
    WebappRequest: obj({
      botId: { ...uuid, description: "The service's bot id (not the messenger's)." },
      auth: obj({ initData: { type: 'string', minLength: 1, description: "The mini-app SDK's launch data, as received; verified with Ed25519." } }, ['initData']),
      events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS, items: ref('WebappEvent') },
    }, ['botId', 'auth', 'events']),
  };
}

// ---------------------------------------------------------------------------------------------
// Admin API: request bodies mirror the ajv schemas of src/admin/api.ts; responses the store's rows.

function adminSchemas(): Record<string, Schema> {
  const messengerId = { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: USER_ID_PATTERN }] };
  const nullableUuid = { anyOf: [{ type: 'string', pattern: '^[0-9a-fA-F-]{36}$' }, { type: 'null' }] };
  const allowance = { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }], description: 'Billed events per calendar month (UTC); null: unlimited.' };
  const projectName = { type: 'string', minLength: 1, maxLength: 200 };
  const botName = { type: ['string', 'null'], maxLength: 200 };
  const counts = { accepted: count('Accepted events.'), rejected: count('Rejected events.'), duplicated: count('Repeats within a request.'), storedNotBilled: count('Stored, not billed.') };
  return {
    CreateProject: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: projectName, eventAllowance: allowance } },
    PatchProject: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name: projectName, eventAllowance: allowance } },
    CreateBot: {
      type: 'object', additionalProperties: false,
      properties: { messengerBotId: { anyOf: [messengerId, { type: 'null' }] }, projectId: nullableUuid, name: botName },
    },
    PatchBot: {
      type: 'object', additionalProperties: false, minProperties: 1, description: '`null` unlinks the project / unsets the messenger id or name.',
      properties: {
        projectId: nullableUuid,
        messengerBotId: { anyOf: [messengerId, { type: 'null' }] },
        miniAppIngest: { type: 'boolean' },
        apiIngest: { type: 'boolean' },
        name: botName,
      },
    },
    Project: closed({ projectId: uuid, name: { type: 'string' }, eventAllowance: { type: ['integer', 'null'], minimum: 0 }, createdAt: instant }),
    Bot: closed({
      botId: uuid,
      messengerBotId: { type: ['integer', 'null'], minimum: 1 },
      projectId: { type: ['string', 'null'], format: 'uuid' },
      miniAppIngest: { type: 'boolean' },
      apiIngest: { type: 'boolean' },
      name: { type: ['string', 'null'] },
      description: { type: ['string', 'null'] },
      starsAmount: { type: ['number', 'null'] },
      snapshotAt: { type: ['string', 'null'], format: 'date-time' },
      createdAt: instant,
    }),
    ProjectCreated: closed({ projectId: uuid, project: ref('Project') }),
    BotCreated: closed({ botId: uuid, bot: ref('Bot') }),
    TokenCreated: closed({ tokenId: uuid, token: { type: 'string', description: 'The value of X-API-Key; shown this once.' }, hint: { type: 'string' } }),
    TokenSummary: closed({ tokenId: uuid, botId: uuid, hint: { type: 'string' }, createdAt: instant, revokedAt: { type: ['string', 'null'], format: 'date-time' } }),
    Usage: closed({
      month: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The current calendar month (UTC), YYYY-MM.' },
      eventAllowance: { type: ['integer', 'null'], minimum: 0 },
      eventsBilled: count('Billed events this month.'),
      eventsStored: count('Stored events this month.'),
    }),
    RevenueLine: closed({
      currency: { type: 'string' },
      totalAmount: { anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?[0-9]+$' }], description: "In the currency's smallest units; a digit string beyond 2^53−1." },
    }),
    ProjectStats: closed({
      since: { ...instant, description: 'When this instance started counting.' },
      minutes: { type: 'array', maxItems: 60, description: 'The last 60 minutes, oldest first, zeros included.', items: closed({ minute: instant, ...counts }) },
      totals: closed({ ...counts, redelivered: count('Events already stored by an earlier request.') }),
      topDiagnostics: { type: 'array', maxItems: 10, items: closed({ code: ref('DiagnosticCode'), count: { type: 'integer', minimum: 1 } }) },
    }, undefined, "This instance's counts (not the cluster's): the last 60 minutes and since start."),
  };
}

function probeSchemas(): Record<string, Schema> {
  return {
    Health: closed({ status: { type: 'string', const: 'ok' } }),
    Readiness: closed({
      status: { type: 'string', enum: ['ready', 'shutting_down', 'migrations_pending', 'database_unreachable'], description: '`ready` with 200, any other value with 503.' },
    }),
  };
}

export function componentSchemas(): Record<string, Schema> {
  return { ...errorSchemas(), ...diagnosticSchemas(), ...eventSchemas(), ...adminSchemas(), ...probeSchemas() };
}
