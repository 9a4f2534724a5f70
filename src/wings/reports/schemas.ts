// The component schemas of the reports: daily, campaigns, revenue.
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
  };
}
