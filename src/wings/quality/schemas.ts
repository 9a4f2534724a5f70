// The component schemas of event quality: tracking plans, the quarantine, replay, and the live view's messages
// (src/http/live.ts).
import { ADMIN_BODIES, PLAN_FIELDS } from '../../admin/bodies.js';
import { ENDPOINTS } from '../../base/endpoints.js';
import { QUARANTINE_EVENT_BYTES } from '../../pipeline/batch.js';
import { MAX_EVENT_DIAGNOSTICS } from '../../pipeline/diagnostics.js';
import { USER_ID_PATTERN } from '../../pipeline/ids.js';
import { MAX_PLAN_BYTES } from '../../pipeline/plans.js';
import { REPLAY_MAX } from '../../quality/replay.js';
import { closed, count, instant, ref, type Schema, uuid } from '../../openapi/schemas.js';

const KIB = (bytes: number) => `${bytes / 1024} KiB`;

export function qualitySchemas(): Record<string, Schema> {
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
