// The component schemas of the lake's status and of funnels.
import { FUNNEL_MAX_STEPS, FUNNEL_MAX_WINDOW_S, FUNNEL_MIN_STEPS, FUNNEL_OPS } from '../../reports/funnel-request.js';
import { closed, count, nullable, obj, ref, type Schema } from '../../openapi/schemas.js';

export function lakeSchemas(): Record<string, Schema> {
  const day = { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' };
  const when = nullable({ type: 'string', format: 'date-time' });
  const step = closed({
    eventName: { type: 'string' },
    users: count('Users who reached this step in order within windowS of their first step.'),
    conversionFromFirst: { type: 'number', minimum: 0, maximum: 1 },
    conversionFromPrevious: { type: 'number', minimum: 0, maximum: 1, description: '1 on the first step.' },
    medianSecondsFromPrevious: nullable({
      type: 'number',
      minimum: 0,
      description: 'null on the first step, or when no user reached it.',
    }),
  });
  return {
    LakeStatus: closed({
      enabled: { type: 'boolean', description: 'false with EXPORT_DIR=none; every other field is then null or 0.' },
      lakeId: nullable({ type: 'string', format: 'uuid' }),
      watermark: { ...when, description: 'Every event received before it is in the lake (history aside).' },
      historyDone: { type: 'boolean', description: 'Whether the events received before the lake began are in it.' },
      lagSeconds: nullable({ type: 'number', minimum: 0, description: 'Now minus the watermark.' }),
      lastExportAt: when,
      files: count("The project's Parquet files of events and users snapshots."),
      bytes: count('Their size.'),
    }),
    FunnelStepRequest: obj(
      {
        eventName: { type: 'string', minLength: 1, maxLength: 4096 },
        where: obj(
          {
            property: { type: 'string', description: 'A property key, or tg.<field> for a promoted field.' },
            op: { type: 'string', enum: [...FUNNEL_OPS] },
            value: {
              type: ['string', 'number', 'boolean'],
              description:
                'Its JSON type names the bucket compared: an integer propsLong (and propsFloat on bot_api), a fraction propsFloat, a string propsString, a boolean propsBool (= and != only).',
            },
          },
          ['property', 'op', 'value'],
          { additionalProperties: false },
        ),
      },
      ['eventName'],
      { additionalProperties: false },
    ),
    FunnelRequest: obj(
      {
        steps: {
          type: 'array',
          minItems: FUNNEL_MIN_STEPS,
          maxItems: FUNNEL_MAX_STEPS,
          items: ref('FunnelStepRequest'),
        },
        from: day,
        to: day,
        windowS: { type: 'integer', minimum: 1, maximum: FUNNEL_MAX_WINDOW_S },
        by: { type: 'string', enum: ['campaign', 'platform'] },
      },
      ['steps', 'from', 'to', 'windowS'],
      { additionalProperties: false },
    ),
    FunnelStep: step,
    Funnel: closed(
      {
        steps: { type: 'array', items: ref('FunnelStep') },
        breakdown: {
          type: 'array',
          description:
            'With `by`: per key (null: users without one), the 100 keys with the most users at the first step.',
          items: closed({ key: nullable({ type: 'string' }), steps: { type: 'array', items: ref('FunnelStep') } }),
        },
      },
      ['steps'],
    ),
  };
}
