import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { ADMIN_AUTH_FAILURES_PER_MIN: '1000' });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

describe('admin API', () => {
  it('refuses every route without the admin token', async () => {
    const routes: [string, string][] = [
      ['POST', '/admin/projects'],
      ['GET', '/admin/projects'],
      ['PATCH', '/admin/projects/00000000-0000-0000-0000-000000000000'],
      ['GET', '/admin/projects/00000000-0000-0000-0000-000000000000/usage'],
      ['POST', '/admin/bots'],
      ['PATCH', '/admin/bots/00000000-0000-0000-0000-000000000000'],
      ['POST', '/admin/bots/00000000-0000-0000-0000-000000000000/tokens'],
      ['DELETE', '/admin/tokens/00000000-0000-0000-0000-000000000000'],
      ['GET', '/admin/projects/00000000-0000-0000-0000-000000000000/reports/revenue'],
    ];
    for (const [method, path] of routes) {
      for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}x`]) {
        const r = await call(`${srv.url}${path}`, {
          method,
          headers: authorization ? { authorization } : {},
          body: method === 'GET' || method === 'DELETE' ? undefined : {},
        });
        expect(r.status, `${method} ${path} with ${authorization}`).toBe(401);
        expect(r.body.error).toBe('admin_unauthorized');
      }
    }
  });

  it('creates, reads and changes a project and its plan', async () => {
    const created = await admin(srv.url, 'POST', '/admin/projects', { name: 'Shop', eventAllowance: 5000 });
    expect(created.status).toBe(201);
    const { projectId } = created.body;
    expect(projectId).toMatch(/^[0-9a-f-]{36}$/);
    const [row] = await db.sql`SELECT name, event_allowance FROM projects WHERE project_id = ${projectId}`;
    expect(row).toEqual({ name: 'Shop', event_allowance: '5000' });

    const patched = await admin(srv.url, 'PATCH', `/admin/projects/${projectId}`, { eventAllowance: null });
    expect(patched.status).toBe(200);
    expect(patched.body.eventAllowance).toBeNull();
    const usage = await admin(srv.url, 'GET', `/admin/projects/${projectId}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ eventAllowance: null, eventsBilled: 0, eventsStored: 0 });
    expect(usage.body.month).toBe(new Date().toISOString().slice(0, 7));

    const unlimitedByDefault = await admin(srv.url, 'POST', '/admin/projects', { name: 'Default plan' });
    expect(unlimitedByDefault.body.project.eventAllowance).toBeNull();
    const list = await admin(srv.url, 'GET', '/admin/projects');
    expect(list.body.map((p: { projectId: string }) => p.projectId)).toEqual(
      expect.arrayContaining([projectId, unlimitedByDefault.body.projectId]),
    );
  });

  it('answers 400 with a message for bad bodies', async () => {
    for (const [path, method, body] of [
      ['/admin/projects', 'POST', {}],
      ['/admin/projects', 'POST', { name: '' }],
      ['/admin/projects', 'POST', { name: 'x', eventAllowance: -1 }],
      ['/admin/projects', 'POST', { name: 'x', extra: 1 }],
      ['/admin/projects', 'POST', '{not json'],
      ['/admin/bots', 'POST', { messengerBotId: 'abc' }],
      ['/admin/bots', 'POST', { miniAppIngest: 'yes' }],
    ] as const) {
      const r = await admin(srv.url, method, path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(typeof r.body.message).toBe('string');
    }
    const p = await admin(srv.url, 'POST', '/admin/projects', { name: 'p' });
    const patch = await admin(srv.url, 'PATCH', `/admin/projects/${p.body.projectId}`, { eventAllowance: 'lots' });
    expect(patch.status).toBe(400);
    expect(patch.body.message).toContain('eventAllowance');
  });

  it('answers 404 for unknown ids', async () => {
    const unknown = '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b';
    for (const [method, path, body] of [
      ['PATCH', `/admin/projects/${unknown}`, { eventAllowance: 1 }],
      ['GET', `/admin/projects/${unknown}/usage`, undefined],
      ['GET', `/admin/projects/${unknown}/reports/revenue`, undefined],
      ['PATCH', `/admin/bots/${unknown}`, { apiIngest: false }],
      ['POST', `/admin/bots/${unknown}/tokens`, undefined],
      ['DELETE', `/admin/tokens/${unknown}`, undefined],
      ['POST', '/admin/bots', { projectId: unknown }],
      ['GET', '/admin/projects/not-a-uuid', undefined],
    ] as const) {
      const r = await admin(srv.url, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toBe('not_found');
    }
  });

  it('creates bots with both switches on, links and configures them', async () => {
    const p = await admin(srv.url, 'POST', '/admin/projects', { name: 'Bots' });
    const created = await admin(srv.url, 'POST', '/admin/bots', { name: 'helper bot' });
    expect(created.status).toBe(201);
    const { botId } = created.body;
    expect(created.body.bot).toMatchObject({
      projectId: null,
      messengerBotId: null,
      miniAppIngest: true,
      apiIngest: true,
      name: 'helper bot',
    });
    const patched = await admin(srv.url, 'PATCH', `/admin/bots/${botId}`, {
      projectId: p.body.projectId,
      messengerBotId: '123456789',
      miniAppIngest: false,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      projectId: p.body.projectId,
      messengerBotId: 123456789,
      miniAppIngest: false,
      apiIngest: true,
    });
    const [row] =
      await db.sql`SELECT project_id, messenger_bot_id, mini_app_ingest, api_ingest FROM bots WHERE bot_id = ${botId}`;
    expect(row).toEqual({
      project_id: p.body.projectId,
      messenger_bot_id: '123456789',
      mini_app_ingest: false,
      api_ingest: true,
    });
    const unlinked = await admin(srv.url, 'PATCH', `/admin/bots/${botId}`, { projectId: null });
    expect(unlinked.body.projectId).toBeNull();
    const listed = await admin(srv.url, 'GET', `/admin/projects/${p.body.projectId}/bots`);
    expect(listed.body).toEqual([]);
  });

  it('shows a token once, stores only its hash, and revokes it', async () => {
    const p = await admin(srv.url, 'POST', '/admin/projects', { name: 'Tokens' });
    const b = await admin(srv.url, 'POST', '/admin/bots', { projectId: p.body.projectId });
    const t = await admin(srv.url, 'POST', `/admin/bots/${b.body.botId}/tokens`);
    expect(t.status).toBe(201);
    expect(t.body.token).toMatch(/^tgk_[A-Za-z0-9_-]{43}$/);
    const rows = await db.sql`SELECT token_hash, hint FROM api_tokens WHERE token_id = ${t.body.tokenId}`;
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(await db.sql`SELECT * FROM api_tokens`);
    expect(stored).not.toContain(t.body.token);
    expect(stored).not.toContain(t.body.token.slice(12));

    const listed = await admin(srv.url, 'GET', `/admin/bots/${b.body.botId}/tokens`);
    expect(listed.body).toEqual([
      {
        tokenId: t.body.tokenId,
        botId: b.body.botId,
        hint: t.body.hint,
        createdAt: expect.any(String),
        revokedAt: null,
        lastUsedAt: null,
        rateLimitPerMin: null,
        rateLimitBurst: null,
      },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(t.body.token);

    expect((await postBotApi(srv.url, t.body.token, { events: [serverEvent()] })).status).toBe(202);
    const del = await admin(srv.url, 'DELETE', `/admin/tokens/${t.body.tokenId}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const after = await postBotApi(srv.url, t.body.token, { events: [serverEvent()] });
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('api_key_invalid');
    const [revoked] = await db.sql`SELECT revoked_at FROM api_tokens WHERE token_id = ${t.body.tokenId}`;
    expect(revoked!.revoked_at).toBeInstanceOf(Date);
  });

  it('reports usage after events are stored', async () => {
    const p = await admin(srv.url, 'POST', '/admin/projects', { name: 'Usage', eventAllowance: 100 });
    const b = await admin(srv.url, 'POST', '/admin/bots', { projectId: p.body.projectId });
    const t = await admin(srv.url, 'POST', `/admin/bots/${b.body.botId}/tokens`);
    const r = await postBotApi(srv.url, t.body.token, { events: [serverEvent(), serverEvent(), serverEvent()] });
    expect(r.status).toBe(202);
    const usage = await admin(srv.url, 'GET', `/admin/projects/${p.body.projectId}/usage`);
    expect(usage.body).toMatchObject({ eventAllowance: 100, eventsBilled: 3, eventsStored: 3 });
  });
});

describe('health', () => {
  it('serves /healthz and /readyz', async () => {
    expect(await call(`${srv.url}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(`${srv.url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
  });

  it('answers unknown paths and methods with JSON errors', async () => {
    const r = await call(`${srv.url}/nope`);
    expect(r).toMatchObject({ status: 404, body: { error: 'not_found' } });
    const m = await call(`${srv.url}/tg`);
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('POST');
  });
});

describe('admin API: messenger bot ids', () => {
  it('refuses a messengerBotId another bot already has, since initData is signed per messenger bot', async () => {
    const first = await admin(srv.url, 'POST', '/admin/bots', { messengerBotId: 9_123_456_789 });
    expect(first.status).toBe(201);
    const second = await admin(srv.url, 'POST', '/admin/bots', { messengerBotId: 9_123_456_789 });
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('messenger_bot_id_taken');
    const other = await admin(srv.url, 'POST', '/admin/bots', {});
    const patch = await admin(srv.url, 'PATCH', `/admin/bots/${other.body.botId}`, { messengerBotId: '9123456789' });
    expect(patch.status).toBe(409);
  });
});

describe('admin API: live stats', () => {
  it('counts accepted, rejected and duplicated events per project and minute, and the top diagnostics', async () => {
    const p = await admin(srv.url, 'POST', '/admin/projects', { name: 'Stats' });
    const b = await admin(srv.url, 'POST', '/admin/bots', { projectId: p.body.projectId });
    const t = await admin(srv.url, 'POST', `/admin/bots/${b.body.botId}/tokens`);
    const dup = serverEvent();
    await postBotApi(srv.url, t.body.token, {
      events: [dup, dup, serverEvent({ eventType: 'odd' }), serverEvent({ platformUserId: undefined })],
    });
    const s = await admin(srv.url, 'GET', `/admin/projects/${p.body.projectId}/stats`);
    expect(s.status).toBe(200);
    expect(s.body.totals).toEqual({ accepted: 2, rejected: 1, duplicated: 1, storedNotBilled: 0, redelivered: 0 });
    expect(s.body.minutes).toHaveLength(60);
    expect(s.body.minutes[59]).toMatchObject({ accepted: 2, rejected: 1, duplicated: 1 });
    expect(s.body.topDiagnostics).toEqual([
      { code: 'event_missing_identity', count: 1 },
      { code: 'event_type_unknown', count: 1 },
    ]);
    expect((await admin(srv.url, 'GET', '/admin/projects/0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b/stats')).status).toBe(
      404,
    );
  });
});
