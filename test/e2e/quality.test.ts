// Event quality over real HTTP and PostgreSQL: tracking plans at the door (both endpoints), the
// quarantine of rejected events, replay once the sender or the plan is fixed, and the bounds.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
    RATE_LIMIT_BURST: '100000',
    QUARANTINE_MAX_EVENTS: '5',
    QUARANTINE_PRUNE_EVERY_MS: '300',
  });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

const purchaseSchema = {
  type: 'object',
  required: ['propsLong', 'propsString'],
  properties: {
    eventType: { const: 'payment' },
    propsLong: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum: 1 } } },
    propsString: { type: 'object', required: ['currency'], properties: { currency: { enum: ['USD', 'EUR', 'XTR'] } } },
  },
};
const plan = (mode: 'warn' | 'block', unplannedEvents: 'allow' | 'warn' | 'block') => ({
  mode,
  unplannedEvents,
  events: { purchase: purchaseSchema, open: { type: 'object' } },
});
const purchase = (over: Record<string, unknown> = {}) =>
  serverEvent({
    eventName: 'purchase',
    eventType: 'payment',
    propsLong: { amount: 100 },
    propsString: { currency: 'USD' },
    ...over,
  });
const usage = async (p: Provisioned) => (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body;
const quarantine = async (p: Provisioned, query = '') =>
  (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/quarantine${query}`)).body;

describe('tracking plans: the admin API', () => {
  it('stores a plan with a version per project, returns it, refuses what ajv cannot compile or what is too large, and deletes it', async () => {
    const p = await provision(srv.url);
    const url = `/admin/projects/${p.projectId}/tracking-plan`;
    expect((await admin(srv.url, 'GET', url)).status).toBe(404);
    const first = await admin(srv.url, 'PUT', url, plan('warn', 'allow'));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ...plan('warn', 'allow'), version: 1, updatedAt: expect.any(String) });
    expect((await admin(srv.url, 'PUT', url, plan('block', 'warn'))).body.version).toBe(2);
    expect((await admin(srv.url, 'GET', url)).body).toMatchObject({
      mode: 'block',
      unplannedEvents: 'warn',
      version: 2,
    });

    const broken = await admin(srv.url, 'PUT', url, {
      mode: 'block',
      unplannedEvents: 'allow',
      events: { purchase: { type: 'integr' } },
    });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({
      error: 'bad_request',
      details: { eventName: 'purchase', error: expect.stringContaining('type') },
    });
    const typo = await admin(srv.url, 'PUT', url, {
      mode: 'block',
      unplannedEvents: 'allow',
      events: { purchase: { type: 'object', requird: ['x'] } },
    });
    expect(typo.status).toBe(400);
    expect(typo.body.details.error).toContain('requird');
    const huge = {
      mode: 'warn',
      unplannedEvents: 'allow',
      events: Object.fromEntries(
        Array.from({ length: 3000 }, (_, i) => [`event_${i}`, { type: 'object', description: 'x'.repeat(80) }]),
      ),
    };
    const tooLarge = await admin(srv.url, 'PUT', url, huge);
    expect([tooLarge.status, tooLarge.body.error]).toEqual([400, 'bad_request']);
    expect(tooLarge.body.details).toEqual({ maxBytes: 262144 });
    expect((await admin(srv.url, 'PUT', url, { mode: 'strict', unplannedEvents: 'allow', events: {} })).status).toBe(
      400,
    );
    expect((await admin(srv.url, 'GET', url)).body.version).toBe(2);

    expect((await admin(srv.url, 'DELETE', url)).status).toBe(204);
    expect((await admin(srv.url, 'GET', url)).status).toBe(404);
    expect((await admin(srv.url, 'PUT', url, plan('warn', 'allow'))).body.version).toBe(3);
    expect((await admin(srv.url, 'GET', `/admin/projects/${randomUUID()}/tracking-plan`)).status).toBe(404);
  });
});

describe('tracking plans at the door', () => {
  it('mode warn: violations are warnings with snake_case paths and the events are stored', async () => {
    const p = await provision(srv.url);
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, plan('warn', 'warn'));
    const bad = purchase({ eventType: 'message', propsLong: { amount: 0 }, propsString: { currency: 'RUB' } });
    const r = await postBotApi(srv.url, p.token, {
      events: [bad, purchase(), serverEvent({ eventName: 'unknown_thing' })],
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 3, rejected: 0 });
    expect(
      r.body.diagnostics
        .map((d: { code: string; severity: string; path: string }) => [d.code, d.severity, d.path])
        .sort(),
    ).toEqual([
      ['event_unplanned', 'warning', 'event_name'],
      ['schema_violation', 'warning', 'event_type'],
      ['schema_violation', 'warning', 'props_long.amount'],
      ['schema_violation', 'warning', 'props_string.currency'],
    ]);
    expect((await usage(p)).eventsStored).toBe(3);
    expect((await quarantine(p)).items).toEqual([]);
  });

  it('mode block: violations and unplanned events are errors, rejected, quarantined and not billed', async () => {
    const p = await provision(srv.url);
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, plan('block', 'block'));
    const many = purchase({
      propsLong: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`n${i}`, i])),
      eventType: 'message',
      propsString: {},
    });
    const unplanned = serverEvent({ eventName: 'unknown_thing' });
    const r = await postBotApi(srv.url, p.token, { events: [purchase(), many, unplanned] });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 1, rejected: 2 });
    const codes = r.body.diagnostics.map((d: { code: string; severity: string; event_id: string }) => [
      d.event_id,
      d.code,
      d.severity,
    ]);
    expect(codes).toContainEqual([unplanned.eventId, 'event_unplanned', 'error']);
    expect(codes.filter((c: string[]) => c[0] === many.eventId).length).toBeLessThanOrEqual(10);
    expect(
      codes
        .filter((c: string[]) => c[0] === many.eventId)
        .every((c: string[]) => c[1] === 'schema_violation' && c[2] === 'error'),
    ).toBe(true);
    expect(await usage(p)).toMatchObject({ eventsStored: 1, eventsBilled: 1 });
    const q = await quarantine(p);
    expect(q.items.map((i: { eventId: string }) => i.eventId).sort()).toEqual([many.eventId, unplanned.eventId].sort());
    const item = q.items.find((i: { eventId: string }) => i.eventId === unplanned.eventId);
    expect(item).toEqual({
      id: expect.any(Number),
      eventId: unplanned.eventId,
      receivedAt: expect.any(String),
      channel: 'bot_api',
      botId: p.botId,
      userId: null,
      truncated: false,
      diagnostics: [expect.objectContaining({ code: 'event_unplanned', severity: 'error', path: 'event_name' })],
      event: unplanned,
    });
    const [{ n }] = await db.sql`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`;
    expect(n).toBe(1);
  });

  it('applies to the webapp endpoint too, and keeps the verified user of a quarantined event', async () => {
    const p = await provision(srv.url);
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, plan('block', 'allow'));
    const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: 5150 } });
    const bad = {
      eventId: randomUUID(),
      eventName: 'purchase',
      eventDate: '2026-11-22T10:00:00Z',
      eventType: 'payment',
      propsLong: { amount: 'lots' },
    };
    const good = {
      eventId: randomUUID(),
      eventName: 'whatever',
      eventDate: '2026-11-22T10:00:00Z',
      eventType: 'interaction',
    };
    const r = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: { botId: p.botId, auth: { initData }, events: [bad, good] },
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 1, rejected: 1 });
    const [item] = (await quarantine(p)).items;
    expect(item).toMatchObject({ eventId: bad.eventId, channel: 'webapp', userId: '5150', event: bad });
  });

  it('no plan: everything as before', async () => {
    const p = await provision(srv.url);
    const r = await postBotApi(srv.url, p.token, {
      events: [purchase({ propsLong: { amount: 0 } }), serverEvent({ eventName: 'anything' })],
    });
    expect(r.body).toMatchObject({ accepted: 2, rejected: 0, diagnostics: [] });
  });
});

describe('the quarantine', () => {
  it('keeps every event rejected after authentication with its reasons, a long one cut to 64 KiB; a request refused whole keeps nothing', async () => {
    const p = await provision(srv.url);
    const noUser = serverEvent({ platformUserId: undefined });
    const long = serverEvent({ platformUserId: 'x', propsString: { pad: 'y'.repeat(100_000) } });
    // Every event rejected: 400 with the normal body, and both are in quarantine.
    const r = await postBotApi(srv.url, p.token, { events: [noUser, long] });
    expect(r.status).toBe(400);
    expect(r.body.rejected).toBe(2);
    // Refused whole: nothing is kept.
    expect((await postBotApi(srv.url, p.token, { events: [{ eventName: 'no id' }] })).status).toBe(400);
    expect((await postBotApi(srv.url, `${p.token}x`, { events: [noUser] })).status).toBe(401);
    const q = await quarantine(p);
    expect(q.items).toHaveLength(2);
    const cut = q.items.find((i: { eventId: string }) => i.eventId === long.eventId);
    expect(cut.truncated).toBe(true);
    expect(typeof cut.event).toBe('string');
    expect(Buffer.byteLength(cut.event)).toBe(64 * 1024);
    expect(cut.event.startsWith(`{"eventId":"${long.eventId}"`)).toBe(true);
    expect(cut.diagnostics).toEqual([expect.objectContaining({ code: 'platform_user_id_invalid', severity: 'error' })]);
    const whole = q.items.find((i: { eventId: string }) => i.eventId === noUser.eventId);
    expect(whole).toMatchObject({ truncated: false, event: JSON.parse(JSON.stringify(noUser)) });
    expect(await usage(p)).toMatchObject({ eventsStored: 0, eventsBilled: 0 });
    expect((await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/quarantine/summary`)).body).toEqual([
      { code: 'event_missing_identity', count: 1 },
      { code: 'platform_user_id_invalid', count: 1 },
    ]);
  });

  it('lists newest first with a cursor, filters by code, and deletes by code', async () => {
    const p = await provision(srv.url);
    for (let i = 0; i < 3; i++)
      await postBotApi(srv.url, p.token, { events: [serverEvent(), serverEvent({ eventOrigin: 'nope' })] });
    await postBotApi(srv.url, p.token, { events: [serverEvent(), serverEvent({ platformUserId: undefined })] });
    const page1 = await quarantine(p, '?limit=2');
    expect(page1.items).toHaveLength(2);
    expect(page1.items[0].id).toBeGreaterThan(page1.items[1].id);
    const page2 = await quarantine(p, `?limit=2&before=${page1.next}`);
    expect(page2.items).toHaveLength(2);
    expect(page2.next).toBeNull();
    expect(page2.items[0].id).toBeLessThan(page1.items[1].id);
    expect((await quarantine(p, '?code=event_origin_invalid')).items).toHaveLength(3);
    expect((await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/quarantine?limit=1001`)).status).toBe(400);
    expect(
      (await admin(srv.url, 'DELETE', `/admin/projects/${p.projectId}/quarantine?code=event_origin_invalid`)).status,
    ).toBe(204);
    expect((await quarantine(p)).items.map((i: { diagnostics: { code: string }[] }) => i.diagnostics[0]!.code)).toEqual(
      ['event_missing_identity'],
    );
  });

  it('stays bounded per project: the oldest go first', async () => {
    const p = await provision(srv.url);
    const sent: string[] = [];
    for (let i = 0; i < 8; i++) {
      const e = serverEvent({ eventOrigin: 'nope' });
      sent.push(e.eventId);
      await postBotApi(srv.url, p.token, { events: [e] });
    }
    let kept: string[] = [];
    for (let i = 0; i < 50; i++) {
      kept = (await quarantine(p)).items.map((x: { eventId: string }) => x.eventId);
      if (kept.length === 5) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(kept).toEqual(sent.slice(3).reverse());
  });

  it('is bounded from the first prune after a start, also for events quarantined before it', async () => {
    const p = await provision(srv.url);
    // Quarantined while no instance ran with this bound (here: written directly).
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const [{ id }] = await db.sql<{ id: string }[]>`
        INSERT INTO quarantine (project_id, bot_id, channel, connection_id, received_at, event_id, codes, diagnostics, event, truncated)
        VALUES (${p.projectId}, ${p.botId}, 'bot_api', 'token:x', now(), ${`e${i}`}, '{event_origin_invalid}', '[]', '{}', false)
        RETURNING id::text`;
      ids.push(id);
    }
    const next = await startServer(db.url, { QUARANTINE_MAX_EVENTS: '5', QUARANTINE_PRUNE_EVERY_MS: '300' });
    try {
      let kept: string[] = [];
      for (let i = 0; i < 50; i++) {
        kept = (
          await db.sql<{ id: string }[]>`SELECT id::text FROM quarantine WHERE project_id = ${p.projectId} ORDER BY id`
        ).map((r) => r.id);
        if (kept.length === 5) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(kept).toEqual(ids.slice(3));
    } finally {
      await next.stop();
    }
  });
});

describe('replay', () => {
  it('dry run first, then stores what passes now (billed, deduplicated), keeps the rest with new reasons', async () => {
    const p = await provision(srv.url);
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, plan('block', 'block'));
    const cheap = purchase({ propsLong: { amount: 0 } });
    const unplanned = serverEvent({ eventName: 'signup' });
    const broken = serverEvent({ platformUserId: 'not a number' });
    const r = await postBotApi(srv.url, p.token, { events: [cheap, unplanned, broken, purchase()] });
    expect(r.body).toMatchObject({ accepted: 1, rejected: 3 });
    // The same id as a quarantined event, stored meanwhile by a fixed sender.
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, {
      mode: 'block',
      unplannedEvents: 'allow',
      events: { purchase: { type: 'object' } },
    });
    expect((await postBotApi(srv.url, p.token, { events: [cheap] })).body.accepted).toBe(1);

    const url = `/admin/projects/${p.projectId}/quarantine/replay`;
    const before = await usage(p);
    const dry = await admin(srv.url, 'POST', url, { dryRun: true });
    expect(dry.body).toEqual({ replayed: 3, accepted: 1, stillRejected: 1, duplicated: 1 });
    expect((await quarantine(p)).items).toHaveLength(3);
    expect(await usage(p)).toEqual(before);

    const done = await admin(srv.url, 'POST', url, {});
    expect(done.body).toEqual({ replayed: 3, accepted: 1, stillRejected: 1, duplicated: 1 });
    const left = (await quarantine(p)).items;
    expect(left.map((i: { eventId: string }) => i.eventId)).toEqual([broken.eventId]);
    expect(left[0].diagnostics.map((d: { code: string }) => d.code)).toEqual(['platform_user_id_invalid']);
    expect(await usage(p)).toMatchObject({
      eventsStored: before.eventsStored + 1,
      eventsBilled: before.eventsBilled + 1,
    });
    const [row] = await db.sql`SELECT channel, bot_id FROM events WHERE event_id = ${unplanned.eventId}`;
    expect(row).toEqual({ channel: 'bot_api', bot_id: p.botId });
    // By id, and nothing left to do.
    expect((await admin(srv.url, 'POST', url, { ids: [left[0].id] })).body).toEqual({
      replayed: 1,
      accepted: 0,
      stillRejected: 1,
      duplicated: 0,
    });
    expect((await admin(srv.url, 'POST', url, { code: 'schema_violation' })).body).toEqual({
      replayed: 0,
      accepted: 0,
      stillRejected: 0,
      duplicated: 0,
    });
    const m = (await admin(srv.url, 'GET', '/metrics')).text;
    expect(m).toMatch(/tg_ingest_replayed_events_total\{outcome="accepted"\} [1-9]/);
    expect(m).toMatch(/tg_ingest_quarantined_events_total\{code="schema_violation"\} [1-9]/);
  });
});

describe('replay past the allowance', () => {
  it('402 once the allowance runs out: what was stored leaves the quarantine, the rest stays for the next replay', async () => {
    const p = await provision(srv.url, { eventAllowance: 3 });
    await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, {
      mode: 'block',
      unplannedEvents: 'block',
      events: {},
    });
    const sent = Array.from({ length: 5 }, () => serverEvent({ eventName: 'signup' }));
    expect((await postBotApi(srv.url, p.token, { events: sent })).body).toMatchObject({ accepted: 0, rejected: 5 });
    await admin(srv.url, 'DELETE', `/admin/projects/${p.projectId}/tracking-plan`);

    const url = `/admin/projects/${p.projectId}/quarantine/replay`;
    const refused = await admin(srv.url, 'POST', url, {});
    expect([refused.status, refused.body.error]).toEqual([402, 'allowance_exhausted']);
    const stored = (
      await db.sql<{ event_id: string }[]>`SELECT event_id FROM events WHERE project_id = ${p.projectId}`
    ).map((r) => r.event_id);
    expect(stored).toHaveLength(3);
    expect(await usage(p)).toMatchObject({ eventsBilled: 3, eventsStored: 3 });
    const left = (await quarantine(p)).items.map((i: { eventId: string }) => i.eventId);
    expect(left.sort()).toEqual(
      sent
        .map((e) => e.eventId as string)
        .filter((id) => !stored.includes(id))
        .sort(),
    );

    await admin(srv.url, 'PATCH', `/admin/projects/${p.projectId}`, { eventAllowance: 10 });
    expect((await admin(srv.url, 'POST', url, {})).body).toEqual({
      replayed: 2,
      accepted: 2,
      stillRejected: 0,
      duplicated: 0,
    });
    expect((await quarantine(p)).items).toHaveLength(0);
    expect(await usage(p)).toMatchObject({ eventsBilled: 5, eventsStored: 5 });
  });
});

describe('a changed plan on another instance', () => {
  it('is in force within 2 × AUTH_CACHE_TTL_MS', async () => {
    const other = await startServer(db.url, { AUTH_CACHE_TTL_MS: '300', RATE_LIMIT_BURST: '100000' });
    try {
      const p = await provision(srv.url);
      expect((await postBotApi(other.url, p.token, { events: [serverEvent({ eventName: 'x' })] })).body.accepted).toBe(
        1,
      );
      await admin(srv.url, 'PUT', `/admin/projects/${p.projectId}/tracking-plan`, plan('block', 'block'));
      const changed = Date.now();
      let accepted = 1;
      while (accepted !== 0 && Date.now() - changed < 5000) {
        accepted = (await postBotApi(other.url, p.token, { events: [serverEvent({ eventName: 'x' })] })).body.accepted;
      }
      expect(accepted).toBe(0);
      // 2 × 300 ms, with room for a slow machine.
      expect(Date.now() - changed).toBeLessThan(3000);
    } finally {
      await other.stop();
    }
  });
});
