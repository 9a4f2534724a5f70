// The live view over a real WebSocket: sign in with the first message, then one message per event
// of the project as it is answered, sampled to LIVE_MESSAGES_PER_S with the skipped ones counted.
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { RATE_LIMIT_BURST: '100000', LIVE_MESSAGES_PER_S: '50' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

interface Viewer {
  ws: WebSocket;
  messages: Record<string, any>[];
  closed: Promise<{ code: number; reason: string }>;
}

function open(projectId: string, token: string | null): Promise<Viewer> {
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/admin/live?projectId=${projectId}`);
  const messages: Record<string, any>[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
  return new Promise((resolve, reject) => {
    ws.on('open', () => {
      if (token !== null) ws.send(JSON.stringify({ token }));
      resolve({ ws, messages, closed });
    });
    ws.on('error', reject);
  });
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the live view', () => {
  it('streams each event of the project with its status and diagnostics', async () => {
    const v = await open(p.projectId, ADMIN_TOKEN);
    await until(() => v.messages.some((m) => m.type === 'ready'));
    const dup = serverEvent({ eventName: 'tapped', eventType: 'interaction' });
    const bad = serverEvent({ eventName: 'broken', platformUserId: undefined });
    await postBotApi(srv.url, p.token, { events: [dup, dup, bad] });
    // Another project's events are not shown.
    const other = await provision(srv.url);
    await postBotApi(srv.url, other.token, { events: [serverEvent()] });
    await until(() => v.messages.length >= 4);
    await new Promise((r) => setTimeout(r, 200));
    const events = v.messages.filter((m) => m.type !== 'ready');
    expect(events).toHaveLength(3);
    expect(events.map((m) => [m.eventId, m.status])).toEqual([
      [dup.eventId, 'accepted'],
      [dup.eventId, 'duplicated'],
      [bad.eventId, 'rejected'],
    ]);
    expect(events[0]).toMatchObject({
      eventName: 'tapped',
      eventType: 'interaction',
      channel: 'bot_api',
      botId: p.botId,
      receivedAt: expect.any(String),
      diagnostics: [],
      event: dup,
      skipped: 0,
    });
    expect(events[2].diagnostics).toEqual([
      expect.objectContaining({ code: 'event_missing_identity', severity: 'error' }),
    ]);
    v.ws.close();
  });

  it('samples to LIVE_MESSAGES_PER_S per viewer and says how many it skipped', async () => {
    const v = await open(p.projectId, ADMIN_TOKEN);
    await until(() => v.messages.some((m) => m.type === 'ready'));
    const started = Date.now();
    let sent = 0;
    for (let i = 0; i < 10; i++) {
      await postBotApi(srv.url, p.token, { events: Array.from({ length: 40 }, () => serverEvent()) });
      sent += 40;
    }
    const floodMs = Date.now() - started;
    const inFlood = v.messages.filter((m) => m.type !== 'ready').length;
    // A burst of 50, refilled at 50 a second while the flood lasted.
    expect(inFlood).toBeLessThanOrEqual(50 + Math.ceil((floodMs / 1000) * 50) + 1);
    expect(inFlood).toBeGreaterThanOrEqual(50);
    // After a second, one more event: its message carries the rest of the count.
    await new Promise((r) => setTimeout(r, 1100));
    await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    sent += 1;
    await until(() => v.messages.filter((m) => m.type !== 'ready').length > inFlood);
    const events = v.messages.filter((m) => m.type !== 'ready');
    expect(events.length + events.reduce((n, m) => n + m.skipped, 0)).toBe(sent);
    v.ws.close();
  });

  it('refuses a viewer without the admin token, and never reads one from the URL', async () => {
    const wrong = await open(p.projectId, 'not-the-token');
    expect((await wrong.closed).code).toBe(4001);
    const inUrl = new WebSocket(
      `${srv.url.replace('http', 'ws')}/admin/live?projectId=${p.projectId}&token=${ADMIN_TOKEN}`,
    );
    const got: string[] = [];
    inUrl.on('message', (d) => got.push(d.toString()));
    await new Promise((r) => inUrl.on('open', r));
    await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toEqual([]);
    inUrl.close();
    const bad = new WebSocket(`${srv.url.replace('http', 'ws')}/admin/live?projectId=nope`);
    const status = await new Promise<number | undefined>((resolve) =>
      bad.on('unexpected-response', (_req, res) => resolve(res.statusCode)),
    );
    expect(status).toBe(400);
  });
});
