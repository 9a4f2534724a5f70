// `events` partitioned by month of received_at: partitions made ahead, deduplication that reaches
// into the previous month, retention by dropping whole months, reports across partitions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '100000' });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const monthName = (offset: number) => {
  const now = new Date();
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  return `events_${d.toISOString().slice(0, 7).replace('-', '_')}`;
};
const lastMonth = () => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15, 12)).toISOString();
};
const partitions = async () =>
  (
    await db.sql<{ name: string }[]>`
  SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`
  ).map((r) => r.name);

describe('partitions', () => {
  it('are monthly, made from the previous month to two months ahead, each with its unique index', async () => {
    expect(await partitions()).toEqual(
      expect.arrayContaining([monthName(-1), monthName(0), monthName(1), monthName(2)]),
    );
    const [kind] = await db.sql`SELECT relkind FROM pg_class WHERE relname = 'events'`;
    expect(kind!.relkind).toBe('p');
    const indexes = await db.sql`SELECT indexname FROM pg_indexes WHERE tablename = ${monthName(0)} ORDER BY 1`;
    expect(indexes.map((i) => i.indexname)).toContain(`${monthName(0)}_project_event_key`);
  });
});

describe('deduplication across a month boundary', () => {
  it('recognises an event stored last month when it is sent again: not stored, not billed twice', async () => {
    const p = await provision(srv.url);
    const early = serverEvent({ eventDate: lastMonth() });
    const payment = serverEvent({
      eventDate: lastMonth(),
      eventOrigin: 'platform',
      eventType: 'payment',
      eventName: 'successful_payment',
      propsString: { 'tg.currency': 'EUR', 'tg.provider_payment_charge_id': 'charge-across' },
      propsLong: { 'tg.total_amount': 700 },
    });
    expect((await postBotApi(srv.url, p.token, { events: [early, payment] })).body.accepted).toBe(2);
    const revenue = async () => (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/revenue`)).body;
    const once = [{ currency: 'EUR', totalAmount: 700, refundedAmount: 0, netAmount: 700, payments: 1, refunds: 0 }];
    await expect.poll(revenue, { timeout: 10_000 }).toEqual(once);
    // As if they had arrived last month: the rows move to last month's partition.
    await db.sql`UPDATE events SET received_at = received_at - interval '1 month' WHERE event_id IN (${early.eventId}, ${payment.eventId})`;
    const [{ part }] =
      await db.sql`SELECT tableoid::regclass::text AS part FROM events WHERE event_id = ${early.eventId}`;
    expect(part).toBe(monthName(-1));
    const usageBefore = (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body;

    // Sent again now, with a new event in the same request.
    const fresh = serverEvent();
    const again = await postBotApi(srv.url, p.token, { events: [early, payment, fresh] });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ accepted: 3, rejected: 0 });
    const rows =
      await db.sql`SELECT event_id, count(*)::int AS n FROM events WHERE project_id = ${p.projectId} GROUP BY 1`;
    expect(Object.fromEntries(rows.map((r) => [r.event_id, r.n]))).toEqual({
      [early.eventId]: 1,
      [payment.eventId]: 1,
      [fresh.eventId]: 1,
    });
    const usage = (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body;
    expect(usage.eventsStored - usageBefore.eventsStored).toBe(1);
    expect(usage.eventsBilled - usageBefore.eventsBilled).toBe(1);
    // The redelivered payment counts once in the revenue report, now and after the aggregates took in the request
    // (the new event of the same request is in the daily report then).
    const day = fresh.eventDate.slice(0, 10);
    await expect
      .poll(
        async () =>
          (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/daily?from=${day}&to=${day}`)).body[0]
            ?.events,
      )
      .toBe(1);
    expect(await revenue()).toEqual(once);
  });
});

describe('retention', () => {
  it('EVENTS_RETENTION_MONTHS drops whole months past it and keeps the window deduplication needs', async () => {
    await db.sql`SELECT tg_events_partition((date_trunc('month', now() AT TIME ZONE 'UTC') - interval '3 months')::date)`;
    expect(await partitions()).toContain(monthName(-3));
    const kept = await startServer(db.url, { EVENTS_RETENTION_MONTHS: '1' });
    try {
      const after = await partitions();
      expect(after).not.toContain(monthName(-3));
      expect(after).toEqual(expect.arrayContaining([monthName(-1), monthName(0)]));
    } finally {
      await kept.stop();
    }
  });
});
