// The retention report against numbers computed here from what was sent: cohorts across a month boundary, a user
// active twice on one day, history that moves a user's first day back, a first campaign that arrives after the first
// day, cohorts by ISO week, one campaign's cohorts, an erasure that takes a user out, CSV, and the refusals.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, eraseAndWait, postBotApi, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, reportsCaughtUp, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

interface Sent {
  user: string;
  day: string;
  campaign?: string;
}
/** Every stored event, in the order sent (each request folded before the next); an erased user's taken out. */
const stored: Sent[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '100000' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const DAY_MS = 86_400_000;
const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const monday = (day: string) => addDays(day, -((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));

/** Sends the events and waits until the reports have folded them (each request before the next). */
async function send(events: Sent[]): Promise<void> {
  const body = events.map((e) => ({
    eventId: randomUUID(),
    eventName: e.campaign === undefined ? 'message_received' : 'command',
    eventType: 'message',
    eventDate: `${e.day}T12:00:00Z`,
    eventOrigin: e.campaign === undefined ? 'custom' : 'platform',
    platformUserId: e.user,
    ...(e.campaign === undefined ? {} : { propsString: { 'tg.command': 'start', 'tg.start_param': e.campaign } }),
  }));
  expect((await postBotApi(srv.url, p.token, { events: body })).status).toBe(202);
  stored.push(...events);
  await expect.poll(() => reportsCaughtUp(db.sql), { timeout: 10_000 }).toBe(true);
}

/** The report as its definition gives it, from `stored`. */
function expected(from: string, to: string, by: 'day' | 'week', campaign: string | null = null) {
  const first = new Map<string, string>();
  const firstCampaign = new Map<string, string>();
  const days = new Map<string, Set<string>>();
  for (const e of stored) {
    if (!first.has(e.user) || e.day < first.get(e.user)!) first.set(e.user, e.day);
    if (e.campaign !== undefined && !firstCampaign.has(e.user)) firstCampaign.set(e.user, e.campaign);
    days.set(e.user, (days.get(e.user) ?? new Set()).add(e.day));
  }
  const step = by === 'day' ? 1 : 7;
  const start = by === 'day' ? from : monday(from);
  const end = by === 'day' ? to : monday(to);
  const bucket = (day: string) => (by === 'day' ? day : monday(day));
  const rows = [];
  for (let cohort = start; cohort <= end; cohort = addDays(cohort, step)) {
    const members = [...first]
      .filter(([u, f]) => bucket(f) === cohort && (campaign === null || (firstCampaign.get(u) ?? '') === campaign))
      .map(([u]) => u);
    const retained = [];
    for (let at = cohort; at <= end; at = addDays(at, step))
      retained.push(members.filter((u) => [...days.get(u)!].some((d) => bucket(d) === at)).length);
    rows.push({ cohort, users: members.length, retained });
  }
  return rows;
}

const report = async (query: string) =>
  admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/retention?${query}`);

describe('the retention report', () => {
  it('counts cohorts and returning users exactly, as they move with history, campaigns and erasures', {
    timeout: 90_000,
  }, async () => {
    const from = '2026-10-26';
    const to = '2026-11-10';
    // Across the month boundary; active twice on 2026-11-02; back a week later.
    await send([
      { user: '9001', day: '2026-10-30' },
      { user: '9001', day: '2026-10-31' },
      { user: '9001', day: '2026-11-02' },
      { user: '9001', day: '2026-11-02' },
      { user: '9001', day: '2026-11-09' },
      { user: '9002', day: '2026-10-31', campaign: 'autumn' },
      { user: '9002', day: '2026-11-01' },
      { user: '9003', day: '2026-11-02' },
      { user: '9004', day: '2026-11-01' },
      { user: '9005', day: '2026-11-03', campaign: 'autumn' },
      { user: '9005', day: '2026-11-04' },
    ]);
    for (const by of ['day', 'week'] as const)
      expect((await report(`from=${from}&to=${to}&by=${by}`)).body).toEqual(expected(from, to, by));
    // Older history: 9003's first day moves back to the week before, and their cells with it.
    await send([{ user: '9003', day: '2026-10-27' }]);
    // 9004's first campaign arrives after their first day: their cohort moves from none to it.
    await send([{ user: '9004', day: '2026-11-05', campaign: 'late' }]);
    // A campaign seen after the first stays second.
    await send([{ user: '9002', day: '2026-11-06', campaign: 'winter' }]);
    // In one fold, 9006's first day moves back and their first campaign arrives.
    await send([{ user: '9006', day: '2026-11-04' }]);
    await send([{ user: '9006', day: '2026-10-28', campaign: 'both' }]);
    for (const by of ['day', 'week'] as const) {
      const all = (await report(`from=${from}&to=${to}&by=${by}`)).body;
      expect(all).toEqual(expected(from, to, by));
      for (const campaign of ['autumn', 'late', 'winter', 'both', ''])
        expect((await report(`from=${from}&to=${to}&by=${by}&campaign=${campaign}`)).body).toEqual(
          expected(from, to, by, campaign),
        );
    }
    // A sample worked out by hand, so the model above is checked too: 9001, 9002, 9003 (moved there), 9004 (on its
    // Sunday) and 9006 (moved there) began in the week of 2026-10-26; all five came back the next week, 9001 alone
    // the week after.
    expect((await report(`from=${from}&to=${to}&by=week`)).body[0]).toEqual({
      cohort: '2026-10-26',
      users: 5,
      retained: [5, 5, 1],
    });

    // An erasure takes 9005 out of every cell.
    await eraseAndWait(srv.url, p.projectId, ['9005']);
    stored.splice(0, stored.length, ...stored.filter((e) => e.user !== '9005'));
    for (const by of ['day', 'week'] as const)
      expect((await report(`from=${from}&to=${to}&by=${by}`)).body).toEqual(expected(from, to, by));
    // Not kept out (no suppression): back, 9005 is a new user, counted once.
    await send([{ user: '9005', day: '2026-11-04' }]);
    for (const by of ['day', 'week'] as const)
      expect((await report(`from=${from}&to=${to}&by=${by}`)).body).toEqual(expected(from, to, by));
    expect((await report(`from=${from}&to=${to}&campaign=autumn`)).body).toEqual(expected(from, to, 'day', 'autumn'));

    // The same numbers as CSV.
    const csv = await call(
      `${srv.url}/admin/projects/${p.projectId}/reports/retention?from=2026-11-01&to=2026-11-03&format=csv`,
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    );
    expect(csv.status).toBe(200);
    const want = expected('2026-11-01', '2026-11-03', 'day');
    expect(csv.text).toBe(
      [
        'cohort,users,retained_0,retained_1,retained_2',
        ...want.map((r) => [r.cohort, r.users, ...r.retained].join(',')),
        '',
      ].join('\r\n'),
    );
  });

  it('reaches as far as a range does: a user back 365 days after their first is in the last cell of 366 days', async () => {
    await send([
      { user: '9201', day: '2024-03-01' },
      { user: '9201', day: '2025-03-01' },
      { user: '9201', day: '2025-03-02' },
    ]);
    const [first] = (await report('from=2024-03-01&to=2025-03-01&by=day')).body;
    expect(first.retained).toHaveLength(366);
    expect(first.retained[0]).toBe(1);
    expect(first.retained[365]).toBe(1);
    expect(first.retained.reduce((a: number, b: number) => a + b, 0)).toBe(2);
    const weeks = (await report('from=2024-03-01&to=2025-03-01&by=week')).body;
    // 2024-03-01 is a Friday: its week began 2024-02-26; 2025-03-01, a Saturday, is in the week of 2025-02-24.
    expect(weeks[0].cohort).toBe('2024-02-26');
    expect(weeks[0].retained.at(-1)).toBe(1);
  });

  it('refuses a reversed or too long range, an unknown grouping and an overlong campaign', async () => {
    for (const q of [
      'from=2026-11-10&to=2026-11-01',
      'from=2025-01-01&to=2026-11-01',
      'by=month',
      `campaign=${'x'.repeat(257)}`,
      'campaign=a%00b',
      'from=0000-01-01&to=0000-01-02',
    ]) {
      const r = await report(q);
      expect([q, r.status, r.body.error]).toEqual([q, 400, 'bad_request']);
    }
    expect((await report(`campaign=${'x'.repeat(256)}`)).status).toBe(200);
  });
});

describe('the retention report after an upgrade', () => {
  it('starts from the days and first days already folded (migration 18 fills its cells from them)', {
    timeout: 60_000,
  }, async () => {
    const d = await createTestDatabase();
    let s = await startServer(d.url);
    try {
      const q = await provision(s.url);
      const events = [
        ['9101', '2026-11-01'],
        ['9101', '2026-11-02'],
        ['9101', '2026-11-09'],
        ['9102', '2026-11-02'],
        ['9102', '2026-11-03'],
      ].map(([user, day]) => ({
        eventId: randomUUID(),
        eventName: 'message_received',
        eventType: 'message',
        eventDate: `${day}T12:00:00Z`,
        eventOrigin: 'custom',
        platformUserId: user,
      }));
      expect((await postBotApi(s.url, q.token, { events })).status).toBe(202);
      await expect.poll(() => reportsCaughtUp(d.sql), { timeout: 10_000 }).toBe(true);
      await s.stop();
      // The database as the build before retention left it.
      await d.sql.begin(async (tx) => {
        await tx`DROP TABLE report_retention, report_retention_weeks, report_active_weeks`;
        await tx`DROP INDEX report_active_user_idx`;
        await tx`DELETE FROM schema_migrations WHERE version = 18`;
      });
      s = await startServer(d.url);
      const get = async (by: string) =>
        (
          await admin(
            s.url,
            'GET',
            `/admin/projects/${q.projectId}/reports/retention?from=2026-11-01&to=2026-11-09&by=${by}`,
          )
        ).body;
      const byDay = await get('day');
      expect(byDay[0]).toEqual({ cohort: '2026-11-01', users: 1, retained: [1, 1, 0, 0, 0, 0, 0, 0, 1] });
      expect(byDay[1]).toEqual({ cohort: '2026-11-02', users: 1, retained: [1, 1, 0, 0, 0, 0, 0, 0] });
      // 2026-11-01 is a Sunday: 9101's cohort is the week of 2026-10-26; 9102's the next.
      expect(await get('week')).toEqual([
        { cohort: '2026-10-26', users: 1, retained: [1, 1, 1] },
        { cohort: '2026-11-02', users: 1, retained: [1, 0] },
        { cohort: '2026-11-09', users: 0, retained: [0] },
      ]);
    } finally {
      await s.stop();
      await d.drop();
    }
  });
});
