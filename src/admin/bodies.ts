// The request bodies of the admin API, written once: the routes validate with them (ajv) and the
// OpenAPI document publishes them (src/openapi/schemas.ts), descriptions and all.
import { TOKEN_LIMIT_MAX } from '../limits/token-bucket.js';
import { USER_ID_PATTERN } from '../pipeline/ids.js';
import { MAX_SCHEMA_VIOLATIONS } from '../pipeline/plans.js';
import { MAX_ERASURE_USERS } from '../privacy/store.js';
import { REPLAY_MAX } from '../quality/replay.js';

type Schema = Record<string, unknown>;

const messengerId = {
  anyOf: [
    { type: 'integer', minimum: 1 },
    { type: 'string', pattern: USER_ID_PATTERN },
  ],
};
const nullableUuid = { anyOf: [{ type: 'string', pattern: '^[0-9a-fA-F-]{36}$' }, { type: 'null' }] };
const allowance = {
  anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }],
  description: 'Billed events per calendar month (UTC); null: unlimited.',
};
const projectName = { type: 'string', minLength: 1, maxLength: 200 };
const botName = { type: ['string', 'null'], maxLength: 200 };

/** A tracking plan's fields: also those of the plan as stored. */
export const PLAN_FIELDS = {
  mode: {
    type: 'string',
    enum: ['warn', 'block'],
    description:
      'What a planned event that breaks its schema gets: `warn`, `schema_violation` warnings (the event is stored); `block`, `schema_violation` errors (the event is rejected and quarantined).',
  },
  unplannedEvents: {
    type: 'string',
    enum: ['allow', 'warn', 'block'],
    description:
      'What an event whose name the plan does not list gets: `allow`, nothing; `warn`, an `event_unplanned` warning (stored); `block`, an `event_unplanned` error (rejected and quarantined).',
  },
  events: {
    type: 'object',
    propertyNames: { minLength: 1, maxLength: 4096 },
    additionalProperties: { anyOf: [{ type: 'object' }, { type: 'boolean' }] },
    description: [
      "Event name → a JSON Schema (draft 2020-12) of the event as the service has normalized it, with the request's field names: `eventName`, `eventType`, `text`, `propsString`, `propsLong`, `propsFloat`, `propsBool`, and on the bot_api endpoint `platformUserId` and `eventOrigin`.",
      'Values are the repaired ones (a truncated string, a dropped property are what the schema sees); `tg.*` fields of platform events appear in their buckets as sent (`propsLong["tg.total_amount"]`). `eventId` and `eventDate` are not part of it.',
      `Unknown keywords are refused (a typo would otherwise check nothing); formats are not validated; patterns run on RE2 (no lookaround or backreferences); a \`$ref\` may only point within the schema, never back to a schema of the same value. At most ${MAX_SCHEMA_VIOLATIONS} \`schema_violation\` diagnostics per event.`,
    ].join(' '),
  },
} as const;

export const ADMIN_BODIES = {
  CreateProject: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: { name: projectName, eventAllowance: allowance },
  },
  PatchProject: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    properties: { name: projectName, eventAllowance: allowance },
  },
  CreateBot: {
    type: 'object',
    additionalProperties: false,
    properties: { messengerBotId: { anyOf: [messengerId, { type: 'null' }] }, projectId: nullableUuid, name: botName },
  },
  PatchBot: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    description: '`null` unlinks the project / unsets the messenger id or name.',
    properties: {
      projectId: nullableUuid,
      messengerBotId: { anyOf: [messengerId, { type: 'null' }] },
      miniAppIngest: { type: 'boolean' },
      apiIngest: { type: 'boolean' },
      name: botName,
    },
  },
  PatchToken: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    description:
      "The token's own bucket on the bot_api endpoint, in force on every instance within 2 × `AUTH_CACHE_TTL_MS` (at once on the one asked); a field left out stays as it is.",
    properties: {
      rateLimitPerMin: {
        anyOf: [{ type: 'integer', minimum: 1, maximum: TOKEN_LIMIT_MAX.maxPerMin }, { type: 'null' }],
        description: 'Requests a minute the bucket refills; null: `RATE_LIMIT_PER_MIN`.',
      },
      rateLimitBurst: {
        anyOf: [{ type: 'integer', minimum: 1, maximum: TOKEN_LIMIT_MAX.maxBurst }, { type: 'null' }],
        description: 'Requests the bucket holds; null: `RATE_LIMIT_BURST`.',
      },
    },
  },
  TrackingPlan: {
    type: 'object',
    additionalProperties: false,
    required: ['mode', 'unplannedEvents', 'events'],
    properties: PLAN_FIELDS,
  },
  ReplayRequest: {
    type: 'object',
    additionalProperties: false,
    description: `Which quarantined events to replay, oldest first, at most ${REPLAY_MAX} per call: those of \`ids\`, those with an error of \`code\` (both: both must hold); neither: all. An empty body is \`{}\`.`,
    properties: {
      ids: {
        type: 'array',
        maxItems: REPLAY_MAX,
        items: { type: 'integer', minimum: 1 },
        description: '`id`s of quarantine entries.',
      },
      code: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: 'A diagnostic code of severity error, e.g. `schema_violation`.',
      },
      dryRun: {
        type: 'boolean',
        description: 'true: only count what would happen; nothing is stored, billed or removed.',
      },
    },
  },
  ErasureRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['userIds'],
    properties: {
      userIds: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_ERASURE_USERS,
        items: { type: 'string', pattern: USER_ID_PATTERN },
        description: `The users' platformUserId (the messenger's user id), as decimal strings; at most ${MAX_ERASURE_USERS}, repeats counted once.`,
      },
      suppress: {
        type: 'boolean',
        description:
          'true: also drop their later events on both endpoints (`user_suppressed`), until the suppression is lifted. Default false.',
      },
    },
  },
} satisfies Record<string, Schema>;
