// Secrets never reach the logs; one user's initData writes only as that user, only for its bot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    LOG_LEVEL: 'trace',
    INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
    RATE_LIMIT_BURST: '2',
  });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

describe('logs', () => {
  it('never carry a token, initData, the admin token or an event payload, whatever happens', async () => {
    const p = await provision(srv.url);
    const marker = `payload-marker-${Date.now()}`;
    const initData = makeInitData(signer, {
      messengerBotId: p.messengerBotId,
      user: { id: 31337, first_name: marker },
    });
    const signature = new URLSearchParams(initData).get('signature')!;
    // Successes, refusals and errors of every kind.
    await postBotApi(srv.url, p.token, { events: [serverEvent({ text: marker, propsString: { k: marker } })] });
    await postBotApi(srv.url, p.token, { events: [serverEvent({ platformUserId: undefined, eventName: marker })] });
    await postBotApi(srv.url, p.token, 'not json');
    for (let i = 0; i < 3; i++) await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    await postBotApi(srv.url, `${p.token}x`, { events: [serverEvent()] });
    await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: {
        botId: p.botId,
        auth: { initData },
        events: [
          {
            eventId: serverEvent().eventId,
            eventName: marker,
            eventDate: '2026-01-01T00:00:00Z',
            eventType: 'message',
          },
        ],
      },
    });
    await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: { botId: p.botId, auth: { initData: initData.replace('auth_date=', 'auth_date=1') }, events: [] },
    });
    await call(`${srv.url}/admin/projects`, { headers: { authorization: 'Bearer wrong-admin-token-value' } });
    await admin(srv.url, 'GET', '/admin/projects');
    await new Promise((r) => setTimeout(r, 200));

    const logs = srv.output.join('\n');
    expect(srv.logs.length).toBeGreaterThan(10);
    expect(srv.logs.some((l) => typeof l.requestId === 'string')).toBe(true);
    for (const secret of [
      p.token,
      p.token.slice(4, 20),
      signature,
      signature.slice(0, 20),
      ADMIN_TOKEN,
      'wrong-admin-token-value',
      marker,
      encodeURIComponent(marker),
    ]) {
      expect(logs, `a log line carries ${secret.slice(0, 12)}…`).not.toContain(secret);
    }
  });
});

describe('initData', () => {
  it('writes only as its own user, whatever the events claim', async () => {
    const p = await provision(srv.url);
    const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: 1001 } });
    const e = {
      eventId: serverEvent().eventId,
      eventName: 'n',
      eventDate: '2026-01-01T00:00:00Z',
      eventType: 'message',
      platformUserId: '2002',
      userId: 2002,
    };
    const r = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: { botId: p.botId, auth: { initData }, events: [e], projectId: p.projectId },
    });
    expect(r.status).toBe(202);
    const [row] = await db.sql`SELECT platform_user_id, project_id FROM events WHERE event_id = ${e.eventId}`;
    expect(row).toEqual({ platform_user_id: '1001', project_id: p.projectId });
  });

  it('cannot be replayed into another bot or its project', async () => {
    const mine = await provision(srv.url);
    const theirs = await provision(srv.url);
    const initData = makeInitData(signer, { messengerBotId: mine.messengerBotId });
    const r = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: {
        botId: theirs.botId,
        auth: { initData },
        events: [
          { eventId: serverEvent().eventId, eventName: 'n', eventDate: '2026-01-01T00:00:00Z', eventType: 'message' },
        ],
      },
    });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('initdata_signature_invalid');
    expect(await db.sql`SELECT 1 FROM events WHERE project_id = ${theirs.projectId}`).toHaveLength(0);
  });
});
