// The component schemas of the reports: daily, retention, campaigns, revenue, sessions.
import { closed, count, type Schema } from '../../openapi/schemas.js';

export function reportsSchemas(): Record<string, Schema> {
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
  return {
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
    RetentionReportRow: closed({
      cohort: {
        type: 'string',
        pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
        description: "The cohort's first day (UTC), or with by=week the Monday of its ISO week.",
      },
      users: count('Users whose earliest stored event falls in the cohort.'),
      retained: {
        type: 'array',
        description:
          "Users of the cohort with a stored event k days (weeks) after its first, k = 0 up to the range's end.",
        items: { type: 'integer', minimum: 0 },
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
    SessionsReportRow: closed({
      day: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'UTC date of the app_open.' },
      sessions: count('Sessions whose app_open falls on that day.'),
      users: count('Distinct users with such a session.'),
      medianDurationS: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Whole seconds; the smallest length at or below which half the sessions lie. Null: no sessions.',
      },
      p90DurationS: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Whole seconds; the smallest length at or below which 90% of the sessions lie. Null: no sessions.',
      },
      sessionsPerUser: { type: 'number', minimum: 0, description: 'sessions / users; 0 without sessions.' },
      byPlatform: {
        type: 'object',
        description:
          "Sessions by the app_open's platform (android, android_x, ios, macos, tdesktop, weba, webk, unigram, web, unknown, other; '' for none).",
        additionalProperties: { type: 'integer', minimum: 0 },
      },
    }),
  };
}
