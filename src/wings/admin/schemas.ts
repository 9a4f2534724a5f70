// The component schemas of the admin API's provisioning: request bodies are the routes' own (src/admin/bodies.ts);
// responses the store's rows.
import { ADMIN_BODIES } from '../../admin/bodies.js';
import { closed, count, instant, ref, type Schema, uuid } from '../../openapi/schemas.js';

export function adminSchemas(): Record<string, Schema> {
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
