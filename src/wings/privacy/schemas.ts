// The component schemas of erasures, suppressions and a user's export.
import { ADMIN_BODIES } from '../../admin/bodies.js';
import { closed, count, instant, ref, type Schema, uuid } from '../../openapi/schemas.js';

export function privacySchemas(): Record<string, Schema> {
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
        lakeFiles: count('Lake files (events, users snapshots) written again without the users.'),
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
