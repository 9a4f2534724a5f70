// Funnels against numbers computed here from what was sent: steps in order within the window (out of order, outside
// the window, a later start that reaches further), a filter on each bucket and on a promoted field, breakdowns by
// platform and by campaign, events just stored (read from the database) and the same once in the lake, and the
// refusals; 409 with the lake off.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, postBotApi, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, reportsCaughtUp, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;
const lake = join(tmpdir(), `tg-lake-funnel-${randomUUID()}`);

type Props = {
  s?: Record<string, string>;
  l?: Record<string, number>;
  f?: Record<string, number>;
  b?: Record<string, boolean>;
};
interface Sent {
  user: string;
  name: string;
  at: number;
  props: Props;
  campaign?: string;
}
const sent: Sent[] = [];

const FROM = '2026-10-05';
const TO = '2026-10-07';
const T0 = Date.parse(`${FROM}T00:00:00Z`);
const H = 3_600_000;

async function send(events: Sent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 500) {
    const body = events.slice(i, i + 500).map((e) => ({
      eventId: randomUUID(),
      eventName: e.name,
      eventType: 'custom',
      eventDate: new Date(e.at).toISOString(),
      // Promoted fields (tg.start_param, the campaign) come from the messenger's own events.
      eventOrigin: e.campaign ? 'platform' : 'custom',
      platformUserId: e.user,
      ...(e.props.s || e.campaign
        ? { propsString: { ...e.props.s, ...(e.campaign ? { 'tg.start_param': e.campaign } : {}) } }
        : {}),
      ...(e.props.l ? { propsLong: e.props.l } : {}),
      ...(e.props.f ? { propsFloat: e.props.f } : {}),
      ...(e.props.b ? { propsBool: e.props.b } : {}),
    }));
    const r = await postBotApi(srv.url, p.token, { events: body });
    expect(r.status).toBe(202);
    expect(r.body.accepted).toBe(body.length);
  }
  sent.push(...events);
}

interface Where {
  property: string;
  op: '=' | '!=' | '>' | '<';
  value: string | number | boolean;
}
interface Step {
  eventName: string;
  where?: Where;
}

/** Whether an event matches a step, as the request defines it. */
function matches(e: Sent, s: Step): boolean {
  if (e.name !== s.eventName) return false;
  if (!s.where) return true;
  const { property, op, value } = s.where;
  let v: unknown;
  if (property === 'tg.start_param') v = e.campaign;
  else if (typeof value === 'string') v = e.props.s?.[property];
  else if (typeof value === 'boolean') v = e.props.b?.[property];
  else if (Number.isInteger(value)) v = e.props.l?.[property] ?? e.props.f?.[property];
  else v = e.props.f?.[property];
  if (v === undefined) return false;
  const a = v as number;
  const b = value as number;
  return op === '=' ? a === b : op === '!=' ? a !== b : op === '>' ? a > b : a < b;
}

/** Every way a user's events can go through the steps: the furthest any reaches, by brute force. */
function furthest(evs: Sent[], steps: Step[], windowMs: number): number {
  let best = 0;
  const walk = (k: number, last: Sent | null, t1: number) => {
    best = Math.max(best, k);
    if (k === steps.length) return;
    for (const e of evs) {
      if (!matches(e, steps[k]!)) continue;
      if (last !== null) {
        if (e === last || e.at < last.at) continue;
        if (steps[k]!.eventName === steps[k - 1]!.eventName && e.at <= last.at) continue;
        if (e.at - t1 > windowMs) continue;
      }
      walk(k + 1, e, last === null ? e.at : t1);
    }
  };
  walk(0, null, 0);
  return best;
}

/** The chain the medians come from: the earliest start that reaches furthest, each next step the earliest after. */
function chain(evs: Sent[], steps: Step[], windowMs: number, reach: number): number[] {
  const sorted = [...evs].sort((a, b) => a.at - b.at);
  for (const start of sorted.filter((e) => matches(e, steps[0]!))) {
    const times = [start.at];
    let last = start;
    for (let k = 1; k < reach; k++) {
      const strict = steps[k]!.eventName === steps[k - 1]!.eventName;
      const next = sorted.find(
        (e) => e !== last && matches(e, steps[k]!) && (strict ? e.at > last.at : e.at >= last.at),
      );
      if (!next || next.at - start.at > windowMs) break;
      times.push(next.at);
      last = next;
    }
    if (times.length === reach) return times;
  }
  throw new Error('no chain reaches as far as the brute force');
}

const median = (xs: number[]) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function expected(steps: Step[], windowS: number, key?: (user: string) => string | null) {
  const inRange = sent.filter((e) => e.at >= T0 && e.at < Date.parse(`${TO}T00:00:00Z`) + 24 * H);
  const users = [...new Set(inRange.map((e) => e.user))];
  const per = new Map<string | null, { reach: number; times: number[] }[]>();
  const all: { reach: number; times: number[] }[] = [];
  for (const u of users) {
    const evs = inRange.filter((e) => e.user === u);
    const reach = furthest(evs, steps, windowS * 1000);
    if (reach === 0) continue;
    const r = { reach, times: chain(evs, steps, windowS * 1000, reach) };
    all.push(r);
    if (key) {
      const k = key(u);
      per.set(k, [...(per.get(k) ?? []), r]);
    }
  }
  const stepsOf = (rs: { reach: number; times: number[] }[]) => {
    const n = steps.map((_, k) => rs.filter((r) => r.reach > k).length);
    return steps.map((s, k) => ({
      eventName: s.eventName,
      users: n[k]!,
      conversionFromFirst: k === 0 ? (n[0]! > 0 ? 1 : 0) : n[0]! > 0 ? n[k]! / n[0]! : 0,
      conversionFromPrevious: k === 0 ? 1 : n[k - 1]! > 0 ? n[k]! / n[k - 1]! : 0,
      medianSecondsFromPrevious:
        k === 0 ? null : median(rs.filter((r) => r.reach > k).map((r) => (r.times[k]! - r.times[k - 1]!) / 1000)),
    }));
  };
  return {
    steps: stepsOf(all),
    breakdown: key
      ? [...per.entries()]
          .map(([k, rs]) => ({ key: k, steps: stepsOf(rs) }))
          .sort((a, b) => b.steps[0]!.users - a.steps[0]!.users || String(a.key).localeCompare(String(b.key)))
      : undefined,
  };
}

async function funnel(body: Record<string, unknown>) {
  return admin(srv.url, 'POST', `/admin/projects/${p.projectId}/reports/funnel`, body);
}

/** Compares numbers to 1e-9 and breakdowns regardless of the order of keys with equal counts. */
function same(actual: any, want: ReturnType<typeof expected>) {
  const norm = (steps: any[]) =>
    steps.map((s) => ({
      ...s,
      conversionFromFirst: Math.round(s.conversionFromFirst * 1e9),
      conversionFromPrevious: Math.round(s.conversionFromPrevious * 1e9),
      medianSecondsFromPrevious:
        s.medianSecondsFromPrevious === null ? null : Math.round(s.medianSecondsFromPrevious * 1e6),
    }));
  expect(norm(actual.steps)).toEqual(norm(want.steps));
  if (want.breakdown) {
    const byKey = (b: any[]) => Object.fromEntries(b.map((x) => [String(x.key), norm(x.steps)]));
    expect(byKey(actual.breakdown)).toEqual(byKey(want.breakdown));
  }
}

const STEPS: Step[] = [
  { eventName: 'app_open' },
  { eventName: 'view_item', where: { property: 'category', op: '=', value: 'shoes' } },
  { eventName: 'purchase', where: { property: 'amount', op: '>', value: 100 } },
];

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    EXPORT_DIR: lake,
    EXPORT_EVERY_MS: '1000',
    WRITE_TIMEOUT_MS: '1000',
    RATE_LIMIT_BURST: '100000',
  });
  p = await provision(srv.url);
  const at = (h: number, s = 0) => T0 + h * H + s * 1000;
  // Cases by hand, then users with random events.
  const hand: Sent[] = [
    // Through all three, in order.
    { user: '1', name: 'app_open', at: at(1), props: { s: { platform: 'ios' } }, campaign: 'spring' },
    { user: '1', name: 'view_item', at: at(1, 10), props: { s: { category: 'shoes' } } },
    { user: '1', name: 'purchase', at: at(1, 70), props: { l: { amount: 200 } } },
    // Out of order: the purchase before the view.
    { user: '2', name: 'app_open', at: at(2), props: { s: { platform: 'android' } } },
    { user: '2', name: 'purchase', at: at(2, 5), props: { l: { amount: 300 } } },
    { user: '2', name: 'view_item', at: at(2, 9), props: { s: { category: 'shoes' } } },
    // The second step outside the window (a day).
    { user: '3', name: 'app_open', at: at(3), props: {} },
    { user: '3', name: 'view_item', at: at(30), props: { s: { category: 'shoes' } } },
    // A later start reaches further than the first.
    { user: '4', name: 'app_open', at: at(0, 1), props: { s: { platform: 'ios' } }, campaign: 'autumn' },
    { user: '4', name: 'app_open', at: at(40), props: {} },
    { user: '4', name: 'view_item', at: at(40, 5), props: { s: { category: 'shoes' } } },
    { user: '4', name: 'purchase', at: at(40, 15), props: { f: { amount: 150 } } },
    // Filters that do not match.
    { user: '5', name: 'app_open', at: at(5), props: {} },
    { user: '5', name: 'view_item', at: at(5, 1), props: { s: { category: 'hats' } } },
    { user: '6', name: 'app_open', at: at(6), props: {} },
    { user: '6', name: 'view_item', at: at(6, 1), props: { s: { category: 'shoes' } } },
    { user: '6', name: 'purchase', at: at(6, 2), props: { l: { amount: 50 } } },
    // Before the range: not counted.
    { user: '7', name: 'app_open', at: at(-5), props: {} },
    { user: '7', name: 'view_item', at: at(-5, 1), props: { s: { category: 'shoes' } } },
  ];
  let seed = 42;
  const rnd = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const names = ['app_open', 'view_item', 'purchase', 'other'];
  const random: Sent[] = [];
  for (let u = 100; u < 260; u++) {
    const base = at(Math.floor(rnd() * 70));
    const n = 1 + Math.floor(rnd() * 6);
    for (let i = 0; i < n; i++) {
      const name = names[Math.floor(rnd() * names.length)]!;
      const props: Props = {
        s: {
          category: rnd() < 0.7 ? 'shoes' : 'hats',
          ...(name === 'app_open' && rnd() < 0.8 ? { platform: rnd() < 0.5 ? 'ios' : 'tdesktop' } : {}),
        },
        l: { amount: Math.floor(rnd() * 300) },
        f: { rating: Math.round(rnd() * 50) / 10 },
        b: { premium: rnd() < 0.5 },
      };
      random.push({
        user: String(u),
        name,
        at: base + Math.floor(rnd() * 3 * H),
        props,
        campaign: u % 3 === 0 ? `c${u % 4}` : undefined,
      });
    }
  }
  await send([...hand, ...random]);
  // The campaigns report's first campaigns, which a breakdown by campaign reads.
  for (let i = 0; i < 200 && !(await reportsCaughtUp(db.sql)); i++) await new Promise((r) => setTimeout(r, 100));
}, 60_000);
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
  rmSync(lake, { recursive: true, force: true });
});

describe('funnels', () => {
  it('count users through the steps in order within the window, from the database and then from the lake', async () => {
    const body = { steps: STEPS, from: FROM, to: TO, windowS: 86_400 };
    const want = expected(STEPS, 86_400);
    // The hand-made cases, as their comments say.
    expect(want.steps.map((s) => s.users).slice(0, 1)[0]).toBeGreaterThan(5);
    const now = await funnel(body);
    expect(now.status).toBe(200);
    same(now.body, want);
    // Once the lake has them all, the same answer from its files.
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/export`)).body.files, {
        timeout: 30_000,
      })
      .toBeGreaterThan(0);
    await expect
      .poll(
        async () => {
          const [r] = await db.sql<{ left: number }[]>`
          SELECT count(*)::int AS left FROM events e, lake_dirs l WHERE l.retired_at IS NULL AND e.received_at >= l.exported_before`;
          return r!.left;
        },
        { timeout: 30_000 },
      )
      .toBe(0);
    same((await funnel(body)).body, want);
  });

  it('filter on each bucket and on a promoted field, with each operator', async () => {
    const cases: Step[][] = [
      [{ eventName: 'app_open' }, { eventName: 'purchase', where: { property: 'rating', op: '<', value: 2.5 } }],
      [{ eventName: 'app_open', where: { property: 'premium', op: '=', value: true } }, { eventName: 'view_item' }],
      [
        { eventName: 'app_open', where: { property: 'premium', op: '!=', value: true } },
        { eventName: 'purchase', where: { property: 'amount', op: '<', value: 120 } },
      ],
      [{ eventName: 'app_open', where: { property: 'tg.start_param', op: '=', value: 'c0' } }, { eventName: 'other' }],
      [
        { eventName: 'view_item', where: { property: 'category', op: '!=', value: 'shoes' } },
        { eventName: 'view_item' },
        { eventName: 'purchase', where: { property: 'amount', op: '=', value: 7 } },
      ],
    ];
    for (const steps of cases) {
      const r = await funnel({ steps, from: FROM, to: TO, windowS: 3600 });
      expect(r.status).toBe(200);
      same(r.body, expected(steps, 3600));
    }
  });

  it('break down by platform and by first campaign', async () => {
    const platformOf = (u: string) =>
      [...sent].filter((e) => e.user === u && e.props.s?.platform && e.at >= T0).sort((a, b) => a.at - b.at)[0]?.props.s
        ?.platform ?? null;
    const byPlatform = await funnel({ steps: STEPS, from: FROM, to: TO, windowS: 86_400, by: 'platform' });
    expect(byPlatform.status).toBe(200);
    same(byPlatform.body, expected(STEPS, 86_400, platformOf));
    const campaignOf = (u: string) => sent.find((e) => e.user === u && e.campaign !== undefined)?.campaign ?? null;
    const byCampaign = await funnel({ steps: STEPS, from: FROM, to: TO, windowS: 86_400, by: 'campaign' });
    same(byCampaign.body, expected(STEPS, 86_400, campaignOf));
  });

  it('answer the CLI: report funnel, with steps written as name:property<op>value, and export', () => {
    const cli = (...args: string[]) => {
      const r = spawnSync(
        process.execPath,
        [fileURLToPath(new URL('../../dist/src/admin/cli.js', import.meta.url)), ...args],
        {
          env: { PATH: process.env.PATH, ADMIN_URL: srv.url, ADMIN_TOKEN },
          encoding: 'utf8',
          timeout: 20_000,
        },
      );
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    const args = [
      'app_open',
      'view_item:category=shoes',
      'purchase:amount>100',
      '--from',
      FROM,
      '--to',
      TO,
      '--window',
      '86400',
    ];
    same(cli('report', 'funnel', p.projectId, ...args), expected(STEPS, 86_400));
    expect(cli('export', p.projectId)).toMatchObject({ enabled: true, historyDone: true });
  });

  it('refuse what is not a funnel, each with 400 and a reason', async () => {
    const ok = { steps: STEPS, from: FROM, to: TO, windowS: 60 };
    const bad: Record<string, unknown>[] = [
      { ...ok, steps: STEPS.slice(0, 1) },
      { ...ok, steps: Array.from({ length: 11 }, () => ({ eventName: 'x' })) },
      { ...ok, steps: [{ eventName: 'a', where: { property: 'p', op: '>=', value: 1 } }, { eventName: 'b' }] },
      { ...ok, steps: [{ eventName: 'a', where: { property: 'p', op: '>', value: true } }, { eventName: 'b' }] },
      { ...ok, steps: [{ eventName: 'a', where: { property: 'tg.nope', op: '=', value: 1 } }, { eventName: 'b' }] },
      { ...ok, steps: [{ eventName: 'a', where: { property: 'bad key!', op: '=', value: 1 } }, { eventName: 'b' }] },
      { ...ok, steps: [{ eventName: 'a\u0000' }, { eventName: 'b' }] },
      { ...ok, steps: [{ eventName: 'a', where: { property: 'p', op: '=', value: 2 ** 60 } }, { eventName: 'b' }] },
      { ...ok, windowS: 0 },
      { ...ok, windowS: 1.5 },
      { ...ok, from: TO, to: FROM },
      { ...ok, from: '2025-01-01', to: '2026-06-01' },
      { ...ok, by: 'country' },
      { ...ok, extra: 1 },
      { steps: STEPS, windowS: 60 },
    ];
    for (const body of bad) {
      const r = await funnel(body);
      expect(r.status, JSON.stringify(body).slice(0, 120)).toBe(400);
      expect(r.body.error).toBe('bad_request');
    }
  });

  it('answer 409 lake_off with the lake off', async () => {
    const off = await startServer(db.url, { EXPORT_DIR: 'none' });
    try {
      const r = await admin(off.url, 'POST', `/admin/projects/${p.projectId}/reports/funnel`, {
        steps: STEPS,
        from: FROM,
        to: TO,
        windowS: 60,
      });
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('lake_off');
      expect((await admin(off.url, 'GET', `/admin/projects/${p.projectId}/export`)).body.enabled).toBe(false);
    } finally {
      await off.stop();
    }
  });
});
