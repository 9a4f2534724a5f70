// JSON Schema 2020-12 component schemas of the OpenAPI document. The enums of error and diagnostic
// codes are read from their tables (src/errors.ts, src/pipeline/diagnostics.ts), the limits and
// patterns from the pipeline's own constants, so the document follows the code when either changes.
import { ENDPOINTS } from '../endpoints.js';
import { ADMIN_BODIES, PLAN_FIELDS } from '../admin/bodies.js';
import { ERRORS, type ErrorCode } from '../errors.js';
import { REPLAY_MAX } from '../quality/replay.js';
import { MAX_EVENTS, QUARANTINE_EVENT_BYTES } from '../pipeline/batch.js';
import {
  DIAGNOSTICS,
  MAX_DIAGNOSTICS,
  MAX_EVENT_DIAGNOSTICS,
  PLAN_CODES,
  type DiagnosticCode,
  type Severity,
} from '../pipeline/diagnostics.js';
import { EVENT_TYPES, LIMITS, PROP_KEY } from '../pipeline/event.js';
import { USER_ID_PATTERN } from '../pipeline/ids.js';
import { MAX_PLAN_BYTES } from '../pipeline/plans.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object',
  ...(required.length > 0 ? { required } : {}),
  properties,
  ...extra,
});
/** A response object the service builds itself: closed, so a new field is a documented change. */
const closed = (
  properties: Record<string, Schema>,
  required = Object.keys(properties),
  description?: string,
): Schema => ({
  ...(description === undefined ? {} : { description }),
  ...obj(properties, required),
  additionalProperties: false,
});
const count = (description: string): Schema => ({ type: 'integer', minimum: 0, description });
const instant = { type: 'string', format: 'date-time' };
const uuid = { type: 'string', format: 'uuid' };

// ---------------------------------------------------------------------------------------------
// Error and diagnostic codes, from their tables.

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];
export const DIAGNOSTIC_CODES = Object.keys(DIAGNOSTICS) as DiagnosticCode[];
export const SEVERITIES = [...new Set(DIAGNOSTIC_CODES.map((c) => DIAGNOSTICS[c].severity))].sort() as Severity[];

/**
 * The severities a code comes with: its table severity, or both for the codes of a tracking plan
 * (PLAN_CODES), whose severity the project's plan decides (the table holds the stricter one).
 */
export const severitiesOf = (c: DiagnosticCode): Severity[] =>
  PLAN_CODES.has(c) ? ['warning', 'error'] : [DIAGNOSTICS[c].severity];

/** The severity as the documentation words it. */
export const severityText = (c: DiagnosticCode): string =>
  PLAN_CODES.has(c) ? 'warning or error (the plan decides)' : DIAGNOSTICS[c].severity;

/** Every HTTP status of the error table, ascending. */
export const ERROR_STATUSES = [...new Set(ERROR_CODES.map((c) => ERRORS[c].status as number))].sort((a, b) => a - b);

export const codesWithStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => ERRORS[c].status === status);

/** Component name of the error body narrowed to one status. */
export const errorSchemaName = (status: number): string => `Error${status}`;

const errorList = (codes: readonly ErrorCode[]): string =>
  codes.map((c) => `- \`${c}\` (${ERRORS[c].status}): ${ERRORS[c].message}`).join('\n');

function errorBody(codes: readonly ErrorCode[], title: string): Schema {
  return closed(
    {
      error: { type: 'string', enum: [...codes], description: `Machine code:\n\n${errorList(codes)}` },
      message: {
        type: 'string',
        description: 'Human-readable reason; may be more specific than the default message above.',
      },
      details: {
        type: 'object',
        description:
          "Where useful, e.g. `{index, field}` for `event_invalid`, `{maxBytes}` for `payload_too_large`, `{errors}` (ajv) for `bad_request`; for a tracking plan that does not compile `{eventName, error}` (ajv's message), for one that is too large `{maxBytes}`.",
      },
    },
    ['error', 'message'],
    title,
  );
}

function errorSchemas(): Record<string, Schema> {
  const out: Record<string, Schema> = {
    ErrorBody: errorBody(ERROR_CODES, 'Every error other than "every event rejected".'),
  };
  for (const status of ERROR_STATUSES)
    out[errorSchemaName(status)] = errorBody(codesWithStatus(status), `The error body of a ${status}.`);
  return out;
}

function diagnosticSchemas(): Record<string, Schema> {
  // Each code has one severity: stated in the schema, so a response pairing them otherwise is invalid.
  // The codes of a tracking plan come with either, as the plan decides, and are left free.
  const severityOfCode = SEVERITIES.map((s) => ({
    if: {
      properties: {
        code: { enum: DIAGNOSTIC_CODES.filter((c) => !PLAN_CODES.has(c) && DIAGNOSTICS[c].severity === s) },
      },
    },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable.
    then: { properties: { severity: { const: s } } },
  }));
  return {
    DiagnosticCode: {
      type: 'string',
      enum: DIAGNOSTIC_CODES,
      description: `Machine code of a diagnostic:\n\n${DIAGNOSTIC_CODES.map((c) => `- \`${c}\` (${severityText(c)}): ${DIAGNOSTICS[c].description}`).join('\n')}`,
    },
    Severity: {
      type: 'string',
      enum: SEVERITIES,
      description: `\`warning\`: the event was repaired and stored (counts in \`accepted\`); \`error\`: it was dropped (counts in \`rejected\`) and kept in the project's quarantine. Each code has one severity, except ${[...PLAN_CODES].map((c) => `\`${c}\``).join(' and ')}, whose severity the project's tracking plan decides.`,
    },
    Diagnostic: {
      ...closed({
        event_id: {
          type: ['string', 'null'],
          description:
            'The eventId as sent (cut when long); null when the event has no string eventId or the item is not an event (`users[i]`, `bot`).',
        },
        code: ref('DiagnosticCode'),
        severity: ref('Severity'),
        path: {
          type: 'string',
          description:
            "The field or property concerned, snake_case: `platform_user_id`, `props_string.<key>`, `users[3]`; for a tracking plan's `schema_violation` the instance path of the failing value (`props_long.amount`, `event_type`), `event` for the event as a whole.",
        },
        message: {
          type: 'string',
          description: "Human-readable; for `schema_violation` the JSON Schema validator's message (`must be >= 1`).",
        },
      }),
      allOf: severityOfCode,
    },
    IngestionResponse: closed(
      {
        accepted: count(
          'Events ingested (possibly repaired, see warnings); includes events already stored by an earlier request.',
        ),
        rejected: count('Events dropped; each has at least one diagnostic of severity `error`.'),
        not_consumed_duplicated: count('Repeats of an earlier eventId within this request.'),
        stored_not_billed: count(
          'Events stored but not charged: another connection reported the same messenger action first.',
        ),
        diagnostics_truncated: {
          type: 'boolean',
          description: `True when there were more than ${MAX_DIAGNOSTICS} diagnostics.`,
        },
        diagnostics: { type: 'array', maxItems: MAX_DIAGNOSTICS, items: ref('Diagnostic') },
      },
      undefined,
      '`accepted + rejected + not_consumed_duplicated` equals the number of events sent.',
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Request bodies of the ingestion endpoints.

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function eventSchemas(): Record<string, Schema> {
  const keys = { propertyNames: { pattern: PROP_KEY.source } };
  const bucket = (values: Schema, description: string): Schema => ({
    type: 'object',
    ...keys,
    additionalProperties: values,
    description,
  });
  const common: Record<string, Schema> = {
    eventId: {
      ...uuid,
      description:
        'Deduplication key, compared case-insensitively; an event already stored for the project counts as accepted and is not stored or billed again.',
    },
    eventName: {
      type: 'string',
      minLength: 1,
      description: `Longer than ${LIMITS.eventNameChars} characters: truncated with a warning.`,
    },
    eventDate: {
      type: 'string',
      description: 'ISO 8601 date-time, years 0001–9999, fractions to microseconds; no offset means UTC.',
      examples: ['2026-01-31T12:00:00Z', '2026-01-31T15:00:00.123456+03:00'],
    },
    eventType: ref('EventType'),
    text: {
      type: 'string',
      description: `Longer than ${LIMITS.textChars} characters: truncated with a warning; not a string: dropped with a warning.`,
    },
    propsString: bucket(
      { type: 'string' },
      `String properties; values longer than ${LIMITS.stringValueChars} characters are truncated with a warning.`,
    ),
    propsLong: bucket({ type: 'integer', minimum: -MAX_SAFE, maximum: MAX_SAFE }, 'Integer properties.'),
    propsBool: bucket({ type: 'boolean' }, 'Boolean properties.'),
  };
  const propsNote = `Property keys match \`${PROP_KEY.source}\`; keys starting with \`$\` are reserved and dropped with a warning; at most ${LIMITS.propsPerEvent} properties per event, the surplus is dropped. Other fields (\`projectId\`, \`botId\`, ...) are ignored.`;
  return {
    EventType: {
      description:
        'One of the nine categories; any other string is stored as `platform` with an `event_type_unknown` warning.',
      anyOf: [{ type: 'string', enum: [...EVENT_TYPES] }, { type: 'string' }],
    },
    MessengerId: {
      description: 'A positive 64-bit integer, as a JSON number or a digit string.',
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', pattern: USER_ID_PATTERN },
      ],
    },
    ServerEvent: {
      description: `An event on the bot_api endpoint. A missing eventId, eventDate, eventType or eventOrigin (or one that is not a string) makes the whole request 400 \`event_invalid\`; other faults reject or repair the event alone. ${propsNote}`,
      ...obj(
        {
          ...common,
          platformUserId: {
            type: 'string',
            pattern: USER_ID_PATTERN,
            description: "The messenger user's id as a string (positive int64).",
          },
          eventOrigin: {
            type: 'string',
            enum: ['platform', 'custom'],
            description:
              '`platform`: `tg.<field>` keys of the canonical registry are promoted; `custom`: stored as given.',
          },
          propsFloat: bucket({ type: 'number' }, 'Fractional properties (finite numbers).'),
        },
        ['eventId', 'eventName', 'eventDate', 'eventType', 'eventOrigin', 'platformUserId'],
      ),
    },
    WebappEvent: {
      description: `An event on the webapp endpoint. The user is initData's \`user.id\`, the origin \`custom\`; \`platformUserId\`, \`eventOrigin\` and \`propsFloat\` are ignored if sent. A missing eventType is stored as \`platform\` with a warning; a missing eventId, eventName or eventDate rejects the event. ${propsNote}`,
      ...obj(common, ['eventId', 'eventName', 'eventDate']),
    },
    UserProfile: {
      description:
        'A profile on the bot_api endpoint. Fields sent are updated; fields absent or `null` keep their stored value. An invalid item is skipped with a `user_profile_invalid` warning.',
      ...obj(
        {
          messengerUserId: ref('MessengerId'),
          username: { type: ['string', 'null'], maxLength: 256 },
          firstName: { type: ['string', 'null'], maxLength: 256 },
          lastName: { type: ['string', 'null'], maxLength: 256 },
          languageCode: { type: ['string', 'null'], maxLength: 256 },
          isPremium: { type: ['boolean', 'null'] },
        },
        ['messengerUserId'],
      ),
    },
    BotSnapshot: {
      description:
        "Updates the bot's snapshot; `messengerBotId` fills in the bot's messenger id only when none is configured. Invalid: ignored with a `bot_snapshot_invalid` warning.",
      ...obj({
        messengerBotId: nullable(ref('MessengerId')),
        name: { type: ['string', 'null'], maxLength: 256 },
        description: { type: ['string', 'null'], description: 'Truncated at 4096 characters.' },
        starsAmount: { type: ['number', 'null'] },
      }),
    },
    ServerRequest: obj(
      {
        events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS, items: ref('ServerEvent') },
        users: {
          type: ['array', 'null'],
          items: ref('UserProfile'),
          description: 'Profiles of people in this batch; free of charge.',
        },
        bot: nullable(ref('BotSnapshot')),
        version: {
          type: 'string',
          const: '1',
          description: 'Omit it; any other value (null included) is 400 `unsupported_version`.',
        },
      },
      ['events'],
      { description: 'A `projectId` or `botId` here is ignored: the token decides both.' },
    ),
    WebappRequest: obj(
      {
        botId: { ...uuid, description: "The service's bot id (not the messenger's)." },
        auth: obj(
          {
            initData: {
              type: 'string',
              minLength: 1,
              description: "The mini-app SDK's launch data, as received; verified with Ed25519.",
            },
          },
          ['initData'],
        ),
        events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS, items: ref('WebappEvent') },
      },
      ['botId', 'auth', 'events'],
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Admin API: request bodies are the routes' own (src/admin/bodies.ts); responses the store's rows.

function adminSchemas(): Record<string, Schema> {
  const minor = (description: string): Schema => ({
    anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?[0-9]+$' }],
    description: `${description} In the currency's smallest units (whole stars for XTR); a digit string beyond 2^53−1.`,
  });
  const revenueTotals = {
    totalAmount: minor('Payments.'),
    refundedAmount: minor('Refunds.'),
    netAmount: minor('Payments less refunds.'),
    payments: count('Charges paid.'),
    refunds: count('Charges refunded.'),
  };
  const counts = {
    accepted: count('Accepted events.'),
    rejected: count('Rejected events.'),
    duplicated: count('Repeats within a request.'),
    storedNotBilled: count('Stored, not billed.'),
  };
  return {
    CreateProject: ADMIN_BODIES.CreateProject,
    PatchProject: ADMIN_BODIES.PatchProject,
    CreateBot: ADMIN_BODIES.CreateBot,
    PatchBot: ADMIN_BODIES.PatchBot,
    PatchToken: ADMIN_BODIES.PatchToken,
    Project: closed({
      projectId: uuid,
      name: { type: 'string' },
      eventAllowance: { type: ['integer', 'null'], minimum: 0 },
      createdAt: instant,
      trackingPlanVersion: {
        type: ['integer', 'null'],
        minimum: 1,
        description: "The version of the project's tracking plan; null: the project has none.",
      },
    }),
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
    TokenCreated: closed({
      tokenId: uuid,
      token: { type: 'string', description: 'The value of X-API-Key; shown this once.' },
      hint: { type: 'string' },
    }),
    TokenSummary: closed({
      tokenId: uuid,
      botId: uuid,
      hint: { type: 'string' },
      createdAt: instant,
      revokedAt: { type: ['string', 'null'], format: 'date-time' },
      lastUsedAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'When a request last presented it; written at most once a minute per instance, so up to a minute behind. null: never.',
      },
      rateLimitPerMin: {
        type: ['integer', 'null'],
        description: "Its own bucket's refill a minute; null: `RATE_LIMIT_PER_MIN`.",
      },
      rateLimitBurst: { type: ['integer', 'null'], description: "Its own bucket's size; null: `RATE_LIMIT_BURST`." },
    }),
    Usage: closed({
      month: {
        type: 'string',
        pattern: '^[0-9]{4}-[0-9]{2}$',
        description: 'The current calendar month (UTC), YYYY-MM.',
      },
      eventAllowance: { type: ['integer', 'null'], minimum: 0 },
      eventsBilled: count('Billed events this month.'),
      eventsStored: count('Stored events this month.'),
    }),
    RevenueLine: closed(
      {
        currency: { type: 'string' },
        ...revenueTotals,
        days: {
          type: 'array',
          description: 'With by=day: every day of the range, oldest first.',
          items: closed({ day: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' }, ...revenueTotals }, [
            'day',
            ...Object.keys(revenueTotals),
          ]),
        },
      },
      ['currency', ...Object.keys(revenueTotals)],
    ),
    CampaignReportRow: closed({
      campaign: { type: ['string', 'null'], description: 'The first start_param; null: none.' },
      newUsers: count('Users whose earliest stored event falls in the range.'),
      activeUsers: count('Distinct users with a stored event in the range (estimated past 512 a day or 8,192 in all).'),
      payers: count('Distinct users with a payment in the range.'),
      revenue: {
        type: 'array',
        items: closed({ currency: { type: 'string' }, netAmount: minor('Payments less refunds.') }),
      },
    }),
    DailyReportRow: closed({
      day: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'UTC date of eventDate.' },
      events: count('Stored events of the day.'),
      eventsByType: {
        type: 'object',
        description: 'Stored events of the day per eventType, every type listed.',
        additionalProperties: { type: 'integer', minimum: 0 },
      },
      activeUsers: count('Distinct users with a stored event that day.'),
      newUsers: count('Users whose earliest stored event falls on that day.'),
    }),
    ProjectStats: closed(
      {
        since: { ...instant, description: 'When this instance started counting.' },
        minutes: {
          type: 'array',
          maxItems: 60,
          description: 'The last 60 minutes, oldest first, zeros included.',
          items: closed({ minute: instant, ...counts }),
        },
        totals: closed({ ...counts, redelivered: count('Events already stored by an earlier request.') }),
        topDiagnostics: {
          type: 'array',
          maxItems: 10,
          items: closed({ code: ref('DiagnosticCode'), count: { type: 'integer', minimum: 1 } }),
        },
      },
      undefined,
      "This instance's counts (not the cluster's): the last 60 minutes and since start.",
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Event quality: tracking plans, the quarantine, replay (src/wings/quality/routes.ts), the live view
// (src/http/live.ts).

const KIB = (bytes: number) => `${bytes / 1024} KiB`;

function qualitySchemas(): Record<string, Schema> {
  const planFields = PLAN_FIELDS;
  const counts = {
    replayed: count(`Quarantined events taken by this call (at most ${REPLAY_MAX}, oldest first).`),
    accepted: count(
      'Events that pass now: stored (billed by the usual rules) and out of quarantine; in a dry run, those that would be.',
    ),
    stillRejected: count(
      'Events that still fail: they stay in quarantine with their new diagnostics (a dry run changes nothing).',
    ),
    duplicated: count(
      'Events whose eventId is stored already (sent again by the client, or replayed twice in this call): out of quarantine, nothing stored.',
    ),
  };
  const liveEvent = closed(
    {
      eventId: {
        type: ['string', 'null'],
        description: 'The eventId as sent (cut to 64 characters); null when there was no string eventId.',
      },
      eventName: {
        type: ['string', 'null'],
        description:
          'The normalized name of an accepted event; the name as sent (cut to 256 characters) otherwise; null when there was none.',
      },
      eventType: { type: ['string', 'null'], description: 'As eventName.' },
      channel: { type: 'string', enum: [...ENDPOINTS] },
      botId: uuid,
      receivedAt: instant,
      status: {
        type: 'string',
        enum: ['accepted', 'rejected', 'duplicated'],
        description:
          '`rejected` events are in the quarantine; `duplicated`: a repeat of an eventId earlier in the same request.',
      },
      diagnostics: {
        type: 'array',
        maxItems: MAX_EVENT_DIAGNOSTICS,
        items: ref('Diagnostic'),
        description: "This event's diagnostics, warnings included.",
      },
      event: { description: 'The event as sent.' },
      skipped: count("Events of this project this viewer was not sent since the message before (the sample's limit)."),
    },
    undefined,
    'One event, sent once it has been answered.',
  );
  return {
    TrackingPlan: {
      ...ADMIN_BODIES.TrackingPlan,
      description: `A project's tracking plan. The body may be at most ${KIB(MAX_PLAN_BYTES)} (else 400 \`bad_request\` with \`details.maxBytes\`); a schema that does not compile is 400 \`bad_request\` with \`details: {eventName, error}\`. A changed plan is in force at once on the instance that took it and within 2 × \`AUTH_CACHE_TTL_MS\` on the others.`,
    },
    StoredTrackingPlan: closed({
      ...planFields,
      version: {
        type: 'integer',
        minimum: 1,
        description:
          "Counts the project's plans: 1, 2, … (a deleted plan keeps its number; the next one gets a new one).",
      },
      updatedAt: instant,
    }),
    QuarantineItem: closed(
      {
        id: {
          type: 'integer',
          minimum: 1,
          description: "The entry's id, for `ids` of a replay; newer entries have larger ids.",
        },
        eventId: {
          type: ['string', 'null'],
          description: 'The eventId as sent (cut to 64 characters); null when there was no string eventId.',
        },
        receivedAt: { ...instant, description: 'When the request arrived.' },
        channel: { type: 'string', enum: [...ENDPOINTS] },
        botId: uuid,
        userId: {
          type: ['string', 'null'],
          pattern: USER_ID_PATTERN,
          description: 'The verified initData user (webapp endpoint), as a digit string; null on bot_api.',
        },
        diagnostics: {
          type: 'array',
          maxItems: MAX_EVENT_DIAGNOSTICS,
          items: ref('Diagnostic'),
          description:
            'Why it was rejected (its warnings too); after a replay that still rejects it, the reasons of that replay.',
        },
        event: {
          description: `The event as sent (any JSON value); when it was over ${KIB(QUARANTINE_EVENT_BYTES)} of JSON, a string holding its first ${KIB(QUARANTINE_EVENT_BYTES)} and \`truncated\` is true.`,
        },
        truncated: { type: 'boolean', description: 'The event was cut: it cannot be replayed.' },
      },
      undefined,
      'An event rejected with an error after authentication, as sent.',
    ),
    QuarantinePage: closed({
      items: { type: 'array', maxItems: 1000, items: ref('QuarantineItem'), description: 'Newest first.' },
      next: {
        type: ['integer', 'null'],
        minimum: 1,
        description: 'Pass it as `before` for the next page; null at the end.',
      },
    }),
    QuarantineCount: closed(
      {
        code: ref('DiagnosticCode'),
        count: { type: 'integer', minimum: 1 },
        warning: { type: 'string', description: 'Only on `quarantine_full`.' },
      },
      ['code', 'count'],
      'Entries with an error of this code (an entry with several codes counts under each); or, as `quarantine_full` with a `warning`, the rejected events not kept because the quarantine held QUARANTINE_MAX_BYTES, since it was last cleared.',
    ),
    ReplayRequest: ADMIN_BODIES.ReplayRequest,
    ReplayResult: closed(counts, undefined, '`replayed = accepted + stillRejected + duplicated`.'),
    LiveSignIn: closed(
      { token: { type: 'string', description: 'The admin token.' } },
      undefined,
      "The viewer's first message on the live view's WebSocket.",
    ),
    LiveMessage: {
      description:
        'A message of the live view: first `ready`, then one per event of the project answered by this instance, as sampled.',
      oneOf: [
        closed(
          {
            type: { type: 'string', const: 'ready' },
            projectId: uuid,
            perSecond: {
              type: 'integer',
              minimum: 1,
              description: '`LIVE_MESSAGES_PER_S`: events sent per second to this viewer at most.',
            },
          },
          undefined,
          'Signed in; events follow.',
        ),
        liveEvent,
      ],
    },
  };
}

function privacySchemas(): Record<string, Schema> {
  const userId = { type: 'string', pattern: '^[1-9][0-9]{0,18}$' };
  const erasure = closed(
    {
      erasureId: uuid,
      status: {
        type: 'string',
        enum: ['pending', 'running', 'done', 'failed'],
        description: '`failed` after five failed attempts at one step; `error` says why.',
      },
      userIds: {
        type: ['array', 'null'],
        items: userId,
        description: 'The ids while it runs and, once done, those still suppressed; else null.',
      },
      userCount: count('How many users it erases.'),
      digest: {
        type: 'string',
        pattern: '^sha256:[0-9a-f]{64}$',
        description:
          'SHA-256 of the ids sorted as numbers, one per line: proves which ids were erased without keeping them.',
      },
      suppress: { type: 'boolean' },
      deleted: closed({
        events: count('Stored events removed.'),
        users: count('Profile rows removed (users table).'),
        quarantine: count('Quarantined events removed.'),
      }),
      createdAt: instant,
      startedAt: { type: ['string', 'null'], format: 'date-time' },
      finishedAt: { type: ['string', 'null'], format: 'date-time' },
      error: { type: 'string', description: 'Only when failed.' },
    },
    [
      'erasureId',
      'status',
      'userIds',
      'userCount',
      'digest',
      'suppress',
      'deleted',
      'createdAt',
      'startedAt',
      'finishedAt',
    ],
  );
  return {
    ErasureRequest: ADMIN_BODIES.ErasureRequest,
    Erasure: erasure,
    ErasurePage: closed({
      items: { type: 'array', maxItems: 1000, items: ref('Erasure'), description: 'Newest first.' },
      next: { type: ['string', 'null'], description: 'Pass it as `before` for the next page; null at the end.' },
    }),
    SuppressionPage: closed({
      items: {
        type: 'array',
        maxItems: 1000,
        items: closed({ userId, erasureId: { type: ['string', 'null'], format: 'uuid' }, createdAt: instant }),
        description: 'By user id.',
      },
      next: { type: ['string', 'null'], description: 'Pass it as `after` for the next page; null at the end.' },
    }),
  };
}

function probeSchemas(): Record<string, Schema> {
  return {
    Health: closed({ status: { type: 'string', const: 'ok' } }),
    Readiness: closed({
      status: {
        type: 'string',
        enum: ['ready', 'shutting_down', 'migrations_pending', 'database_unreachable'],
        description: '`ready` with 200, any other value with 503.',
      },
    }),
  };
}

export function componentSchemas(): Record<string, Schema> {
  return {
    ...errorSchemas(),
    ...diagnosticSchemas(),
    ...eventSchemas(),
    ...adminSchemas(),
    ...qualitySchemas(),
    ...privacySchemas(),
    ...probeSchemas(),
  };
}
