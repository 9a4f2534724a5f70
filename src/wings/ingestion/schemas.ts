// The component schemas of the ingestion endpoints' request and response bodies, from the pipeline's own limits.
import { MAX_EVENTS } from '../../pipeline/batch.js';
import { EVENT_TYPES, LIMITS, PROP_KEY } from '../../pipeline/event.js';
import { USER_ID_PATTERN } from '../../pipeline/ids.js';
import { nullable, obj, ref, type Schema, uuid } from '../../openapi/schemas.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export function ingestionSchemas(): Record<string, Schema> {
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
