// The sessions report against numbers computed here from what was sent: a session across midnight, one with no close,
// one whose close came too late to count, one with an app_open alone, two platforms, users with several sessions,
// events of a session that never opened, a close that arrives before its open, a redelivery beside new events (rows
// no summary holds), a session id another user names, and an erasure that takes a user's sessions away.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportStore } from '../../src/reports/queries.js';
import { admin, call, eraseAndWait, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

interface Sent {
  eventId: string;
  eventName: string;
  eventType: string;
  eventDate: string;
  propsString: Record<string, string>;
}
/** What the service stored of each user's webapp events, as this test knows it. */
const stored = new Map<number, Sent[]>();

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex, RATE_LIMIT_BURST: '100000' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const ev = (eventName: string, eventDate: string, session: string, extra: Record<string, string> = {}): Sent => ({
  eventId: randomUUID(),
  eventName,
  eventType: eventName.startsWith('app_') ? 'platform' : 'interaction',
  eventDate,
  propsString: { session_id: session, ...extra },
});
const open = (date: string, session: string, platform: string) => ev('app_open', date, session, { platform });

async function send(user: number, events: Sent[], redelivered: Sent[] = []): Promise<void> {
  const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: user, first_name: 'U' } });
  const r = await call(`${srv.url}/tg/webapp`, {
    method: 'POST',
    body: { botId: p.botId, auth: { initData }, events: [...redelivered, ...events] },
  });
  expect(r.status, r.text).toBe(202);
  expect(r.body.accepted).toBe(events.length + redelivered.length);
  stored.set(user, [...(stored.get(user) ?? []), ...events]);
}

/** The report as the definition gives it, from `stored`. */
function expected(from: string, to: string) {
  interface S {
    user: number;
    opened: number | null;
    platform: string;
    last: number | null;
    closed: number | null;
  }
  const sessions = new Map<string, S>();
  for (const [user, events] of stored)
    for (const e of events) {
      const id = e.propsString.session_id!;
      if (!/^[0-9a-f-]{36}$/i.test(id)) continue;
      const key = `${user} ${id.toLowerCase()}`;
      const s = sessions.get(key) ?? { user, opened: null, platform: '', last: null, closed: null };
      const t = Date.parse(e.eventDate);
      // Years 1-9999 in UTC only.
      if (!(t >= Date.parse('0001-01-01T00:00:00Z') && t < Date.parse('+010000-01-01T00:00:00Z'))) continue;
      sessions.set(key, s);
      if (e.eventName === 'app_close') s.closed = Math.max(s.closed ?? t, t);
      else s.last = Math.max(s.last ?? t, t);
      if (e.eventName === 'app_open' && (s.opened === null || t < s.opened)) {
        s.opened = t;
        const p = e.propsString.platform;
        s.platform = p === undefined ? '' : KNOWN.includes(p) ? p : 'other';
      }
    }
  const rows = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    const those = [...sessions.values()].filter(
      (s) => s.opened !== null && new Date(s.opened).toISOString().slice(0, 10) === day,
    );
    const lengths = those
      .map((s) => {
        const end = s.closed !== null && s.closed <= s.last! + 30 * 60_000 ? s.closed : s.last!;
        return Math.min(86_400, Math.max(0, Math.floor((end - s.opened!) / 1000)));
      })
      .sort((a, b) => a - b);
    const nearestRank = (q: number) => (lengths.length === 0 ? null : lengths[Math.ceil(q * lengths.length) - 1]!);
    const users = new Set(those.map((s) => s.user)).size;
    const byPlatform: Record<string, number> = {};
    for (const s of those) byPlatform[s.platform] = (byPlatform[s.platform] ?? 0) + 1;
    rows.push({
      day,
      sessions: those.length,
      users,
      medianDurationS: nearestRank(0.5),
      p90DurationS: nearestRank(0.9),
      sessionsPerUser: users === 0 ? 0 : those.length / users,
      byPlatform,
    });
  }
  return rows;
}

/** The platforms the messenger names; any other word counts as `other`. */
const KNOWN = ['android', 'android_x', 'ios', 'macos', 'tdesktop', 'weba', 'webk', 'unigram', 'web', 'unknown'];

/** Erases a user and waits until the erasure is done. */
const erase = (user: number) => eraseAndWait(srv.url, p.projectId, [String(user)]);

const report = async (query: string) =>
  admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/sessions?${query}`);

describe('the sessions report', () => {
  it('counts sessions, users, lengths and platforms per day of app_open, as the definition gives them', {
    timeout: 90_000,
  }, async () => {
    const [a, b, c] = [710_001, 710_002, 710_003];
    const s = Array.from({ length: 8 }, () => randomUUID());
    // a: across midnight, closed 30 minutes after its open (counted on the 10th); then one with no close.
    await send(a, [
      open('2026-11-10T23:50:00Z', s[0]!, 'ios'),
      ev('main_button_clicked', '2026-11-11T00:10:00Z', s[0]!),
      ev('app_close', '2026-11-11T00:20:00Z', s[0]!),
      open('2026-11-11T10:00:00Z', s[1]!, 'ios'),
      ev('page_view', '2026-11-11T10:05:30.250Z', s[1]!),
    ]);
    // b: closed after 45 s; and one whose close came 110 minutes after its last event (its length ends there).
    const late = ev('app_close', '2026-11-10T15:00:00Z', s[3]!);
    await send(b, [
      open('2026-11-10T12:00:00Z', s[2]!, 'android'),
      ev('app_close', '2026-11-10T12:00:45Z', s[2]!),
      ev('app_close', '2026-11-10T12:00:30Z', s[2]!),
      late,
    ]);
    // The close above arrived first; the open and the rest come in a later request, beside a redelivery.
    await send(
      b,
      [open('2026-11-10T13:00:00Z', s[3]!, 'android'), ev('coupon', '2026-11-10T13:10:00Z', s[3]!)],
      [late],
    );
    // c: events of a session that never opened (not a session), an app_open alone (0 s, no platform given), and a
    // session id that is no UUID.
    await send(c, [
      ev('coupon', '2026-11-11T07:00:00Z', s[4]!),
      ev('app_close', '2026-11-11T07:05:00Z', s[4]!),
      ev('app_open', '2026-11-11T08:00:00Z', s[5]!.toUpperCase()),
      open('2026-11-11T09:00:00Z', 'not-a-uuid', 'weba'),
    ]);
    // c names a's first session id: a session of c's own, which does not stretch a's.
    await send(c, [open('2026-11-10T20:00:00Z', s[0]!, 'weba'), ev('app_close', '2026-11-10T20:01:00Z', s[0]!)]);
    // A bot_api event with a session_id is not a mini-app's.
    const bot = await postBotApi(srv.url, p.token, {
      events: [
        serverEvent({
          platformUserId: String(a),
          eventName: 'app_open',
          propsString: { session_id: s[6]!, platform: 'ios' },
        }),
      ],
    });
    expect(bot.status).toBe(202);

    // The request with the redelivery went through the staging table: its rows are in no summary, and are read from
    // the table by the sessions' fold.
    const [outside] = await db.sql`
      SELECT count(*)::int AS n FROM events WHERE summarized IS NOT TRUE AND props_string ? 'session_id'`;
    expect(outside!.n).toBeGreaterThan(0);
    const want = expected('2026-11-09', '2026-11-12');
    // Folded a second or two behind.
    await expect
      .poll(async () => (await report('from=2026-11-09&to=2026-11-12')).body, { timeout: 20_000, interval: 250 })
      .toEqual(want);
    // The numbers this test expects, spelled out once, so the model above cannot agree with a wrong report by itself.
    expect(want.map((r) => [r.day, r.sessions, r.users, r.medianDurationS, r.p90DurationS])).toEqual([
      ['2026-11-09', 0, 0, null, null],
      ['2026-11-10', 4, 3, 60, 1800],
      ['2026-11-11', 2, 2, 0, 330],
      ['2026-11-12', 0, 0, null, null],
    ]);
    expect(want[1]!.byPlatform).toEqual({ ios: 1, android: 2, weba: 1 });
    expect(want[2]!.byPlatform).toEqual({ ios: 1, '': 1 });

    // Later events change counted sessions: one grows longer, one opened earlier moves to the day before, on another
    // platform (what it counted moves with it); a platform no messenger names is `other`; dates out of years
    // 1-9999 UTC (year 0 here) are never a session, and a date in year 9999 breaks nothing (nor does year 0 stop the
    // erasure below: its day in report_days once failed every erasure of the project).
    await send(a, [ev('tap', '2026-11-11T10:20:00Z', s[1]!)]);
    await send(b, [open('2026-11-09T23:59:00Z', s[2]!, 'weba')]);
    await send(c, [
      open('2026-11-09T08:00:00Z', s[7]!, 'smart_fridge'),
      open('0001-01-01T00:30:00+01:00', randomUUID(), 'ios'),
      open('9999-06-01T00:00:00Z', randomUUID(), 'ios'),
    ]);
    const moved = expected('2026-11-09', '2026-11-12');
    expect(moved.map((r) => [r.day, r.sessions, r.users, r.medianDurationS, r.p90DurationS])).toEqual([
      ['2026-11-09', 2, 2, 0, 43_305],
      ['2026-11-10', 3, 3, 600, 1800],
      ['2026-11-11', 2, 2, 0, 1200],
      ['2026-11-12', 0, 0, null, null],
    ]);
    expect(moved[0]!.byPlatform).toEqual({ weba: 1, other: 1 });
    await expect
      .poll(async () => (await report('from=2026-11-09&to=2026-11-12')).body, { timeout: 20_000, interval: 250 })
      .toEqual(moved);

    const csv = await report('from=2026-11-10&to=2026-11-11&format=csv');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.text.split('\r\n')[0]).toBe(
      'day,sessions,users,median_duration_s,p90_duration_s,sessions_per_user,sessions_,sessions_android,sessions_ios,sessions_weba',
    );
    expect(csv.text.split('\r\n')[1]).toBe('2026-11-10,3,3,600,1800,1,0,1,1,1');

    // A range reversed or too long is refused.
    expect((await report('from=2026-11-12&to=2026-11-10')).status).toBe(400);
    expect((await report('from=2025-01-01&to=2026-11-10')).status).toBe(400);

    // b is erased: b's two sessions leave the 10th.
    await erase(b);
    stored.delete(b);
    const after = expected('2026-11-09', '2026-11-10');
    expect(after[1]).toMatchObject({ sessions: 2, users: 2, byPlatform: { ios: 1, weba: 1 } });
    expect((await report('from=2026-11-09&to=2026-11-10')).body).toEqual(after);
    // d is erased at once, while d's records most likely still wait in the commit's summary: nothing of d is folded.
    const d = 710_004;
    await send(d, [open('2026-11-10T06:00:00Z', randomUUID(), 'ios')]);
    await erase(d);
    stored.delete(d);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await report('from=2026-11-09&to=2026-11-10')).body).toEqual(after);
    // Nothing of b or d is left in the sessions' tables.
    const [gone] = await db.sql`
      SELECT (SELECT count(*) FROM report_sessions WHERE user_id = ${d})::int
           + (SELECT count(*) FROM report_session_users WHERE user_id = ${d})::int AS n`;
    expect(gone!.n).toBe(0);
    const [left] = await db.sql`
      SELECT (SELECT count(*) FROM report_sessions WHERE user_id = ${b})::int
           + (SELECT count(*) FROM report_session_users WHERE user_id = ${b})::int AS n`;
    expect(left!.n).toBe(0);
  });

  it('takes the nearest-rank percentile of lengths kept as counts', async () => {
    const project = randomUUID();
    // 7 once on the 2nd; 1, 2, 2, 10 on the 3rd: the median is the 2nd (2), p90 the 4th (10); nothing on the 1st.
    const lengths: [string, number, number][] = [
      ['2026-10-02', 7, 1],
      ['2026-10-03', 1, 1],
      ['2026-10-03', 2, 2],
      ['2026-10-03', 10, 1],
    ];
    for (const [day, seconds, sessions] of lengths)
      await db.sql`INSERT INTO report_session_lengths VALUES (${project}, ${day}, ${seconds}, ${sessions})`;
    const rows = await new ReportStore(db.sql).sessions(project, { from: '2026-10-01', to: '2026-10-03' });
    expect(rows.map((r) => [r.medianDurationS, r.p90DurationS])).toEqual([
      [null, null],
      [7, 7],
      [2, 10],
    ]);
  });
});
