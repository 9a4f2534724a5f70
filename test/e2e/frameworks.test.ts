// The grammY and Telegraf middlewares, driven by the real frameworks (bot.handleUpdate with botInfo given, so no
// network is touched) against the real service and PostgreSQL: recorded updates of every mapped type land as the
// table says, a redelivered update is stored once, the bot answers while the service is down and its events arrive
// once the service is back, and payments reach the revenue report.
import { Bot } from 'grammy';
import { Telegraf } from 'telegraf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateEventId, updateNamespace } from '../../client/src/updates/ids.js';
import { tgIngest as grammyIngest, type TgIngestFlavor as GrammyFlavor } from '../../integrations/grammy/src/index.js';
import {
  tgIngest as telegrafIngest,
  type TgIngestFlavor as TelegrafFlavor,
} from '../../integrations/telegraf/src/index.js';
import { freePort } from '../../src/db/embedded.js';
import { admin, provision, type Provisioned } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { EXPECTED, FIXTURES } from '../fixtures/updates.js';

type Update = { update_id: number } & Record<string, unknown>;
const BOT_USER = 5550001;

let db: TestDatabase;
let srv: RunningServer;
let port: number;
const env = { RATE_LIMIT_BURST: '100000', LOG_LEVEL: 'warn' };

beforeAll(async () => {
  db = await createTestDatabase();
  port = await freePort();
  srv = await startServer(db.url, { ...env, PORT: String(port) });
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What both frameworks look like to the test: feed an update, flush, close. */
interface Harness {
  handle(update: object): Promise<void>;
  /** Update ids the bot's own handler saw, in order. */
  answered: number[];
  flush(): Promise<void>;
  close(): Promise<void>;
  stats(): { dropped: number; failed: number; rejected: number };
}

function grammyBot(p: Provisioned, botInfoName: string): Harness {
  const bot = new Bot<import('grammy').Context & GrammyFlavor>('1:test', {
    botInfo: {
      id: p.messengerBotId,
      is_bot: true,
      first_name: botInfoName,
      username: 'shop_bot',
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: true,
      can_connect_to_business: true,
      has_main_web_app: false,
    } as never,
  });
  const mw = grammyIngest<import('grammy').Context & GrammyFlavor>({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: p.token,
    flushIntervalMs: 50,
    onError: () => undefined,
  });
  const answered: number[] = [];
  bot.use(mw);
  bot.command('buy', async (ctx, next) => {
    ctx.track('added_to_cart', { sku: 'red-shoes', qty: 2, price: 19.5, gift: true });
    await next();
  });
  bot.use((ctx) => {
    answered.push(ctx.update.update_id);
  });
  return {
    handle: (u) => bot.handleUpdate(u as never),
    answered,
    flush: () => mw.flush(),
    close: () => mw.close(),
    stats: () => mw.tracker.stats,
  };
}

function telegrafBot(p: Provisioned, botInfoName: string): Harness {
  const bot = new Telegraf<import('telegraf').Context & TelegrafFlavor>('1:test');
  bot.botInfo = {
    id: p.messengerBotId,
    is_bot: true,
    first_name: botInfoName,
    username: 'shop_bot',
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: true,
  } as never;
  const mw = telegrafIngest<import('telegraf').Context & TelegrafFlavor>({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: p.token,
    flushIntervalMs: 50,
    onError: () => undefined,
  });
  const answered: number[] = [];
  bot.use(mw);
  bot.command('buy', async (ctx, next) => {
    ctx.track('added_to_cart', { sku: 'red-shoes', qty: 2, price: 19.5, gift: true });
    await next();
  });
  bot.use((ctx) => {
    answered.push(ctx.update.update_id);
  });
  return {
    handle: (u) => bot.handleUpdate(u as never),
    answered,
    flush: () => mw.flush(),
    close: () => mw.close(),
    stats: () => mw.tracker.stats,
  };
}

const BUY: Update = {
  update_id: 990001,
  message: {
    message_id: 500,
    from: { id: BOT_USER, is_bot: false, first_name: 'Ada', username: 'ada' },
    chat: { id: BOT_USER, type: 'private', first_name: 'Ada' },
    date: 1764000100,
    text: '/buy',
    entities: [{ offset: 0, length: 4, type: 'bot_command' }],
  },
};

for (const [framework, make] of [
  ['grammY', grammyBot],
  ['Telegraf', telegrafBot],
] as const) {
  describe(`${framework} middleware`, () => {
    let p: Provisioned;
    let bot: Harness;

    beforeAll(async () => {
      p = await provision(srv.url);
      bot = make(p, `${framework} shop`);
      for (const update of Object.values(FIXTURES)) await bot.handle(update);
      await bot.handle(BUY);
      await bot.flush();
    });
    afterAll(async () => {
      await bot?.close();
    });

    it('lets the bot answer every update', () => {
      expect(bot.answered).toEqual([...Object.values(FIXTURES).map((u) => u.update_id), BUY.update_id]);
    });

    it('stores every fixture as the table says: type, name, origin, user and promoted tg fields', async () => {
      for (const [name, update] of Object.entries(FIXTURES)) {
        const id = updateEventId(updateNamespace(p.token), p.messengerBotId, update.update_id, 0);
        const rows = await db.sql<
          {
            event_name: string;
            event_type: string;
            origin: string;
            platform_user_id: string;
            tg: object;
            text: string | null;
          }[]
        >`SELECT event_name, event_type, origin, platform_user_id::text, tg, text FROM events
          WHERE project_id = ${p.projectId} AND event_id = ${id}`;
        expect(rows.length, `${name} stored`).toBe(1);
        const row = rows[0]!;
        const want = EXPECTED[name]!;
        expect([row.event_type, row.event_name, row.origin], name).toEqual([want.type, want.name, 'platform']);
        expect(row.tg, name).toMatchObject({ update_id: update.update_id, ...want.tg });
        expect(row.text, `${name}: no text without captureText`).toBeNull();
      }
      // The person: from.id, else the bot itself (a channel post names nobody).
      const [post] = await db.sql<{ u: string }[]>`SELECT platform_user_id::text AS u FROM events
        WHERE project_id = ${p.projectId} AND event_name = 'channel_post'`;
      expect(post!.u).toBe(String(p.messengerBotId));
    });

    it('stores ctx.track as a custom event of the same user, its id derived from the update', async () => {
      const id = updateEventId(updateNamespace(p.token), p.messengerBotId, BUY.update_id, 1, 'added_to_cart');
      const [row] = await db.sql<Record<string, unknown>[]>`SELECT event_name, event_type, origin,
          platform_user_id::text AS u, props_string, props_long, props_float, props_bool
        FROM events WHERE project_id = ${p.projectId} AND event_id = ${id}`;
      expect(row).toMatchObject({
        event_name: 'added_to_cart',
        event_type: 'interaction',
        origin: 'custom',
        u: String(BOT_USER),
        props_string: { sku: 'red-shoes' },
        props_long: { qty: 2 },
        props_float: { price: 19.5 },
        props_bool: { gift: true },
      });
    });

    it('writes each user profile and the bot snapshot', async () => {
      const users = await db.sql<{ id: string; username: string | null; is_premium: boolean | null }[]>`
        SELECT messenger_user_id::text AS id, username, is_premium FROM users WHERE project_id = ${p.projectId}
        ORDER BY messenger_user_id`;
      // The bot's own id has a row too (a channel post's user), with no profile.
      expect(users.map((u) => [u.id, u.username])).toEqual([
        ['5550001', 'ada'],
        ['5550002', 'alan'],
        [String(p.messengerBotId), null],
      ]);
      expect(users[0]!.is_premium).toBe(true);
      const [b] = await db.sql<{ name: string }[]>`SELECT name FROM bots WHERE bot_id = ${p.botId}`;
      expect(b!.name).toBe(`${framework} shop`);
    });

    it('stores an update delivered twice once, and bills it once', async () => {
      const [before] = await db.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`;
      const billed = (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`)).body.eventsBilled;
      expect(billed).toBeGreaterThan(0);
      await bot.handle(FIXTURES.message!);
      await bot.handle(FIXTURES.successful_payment!);
      await bot.flush();
      const [after] = await db.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`;
      expect(after!.n).toBe(before!.n);
      const usage = await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/usage`);
      expect(usage.body.eventsBilled).toBe(billed);
    });

    it('puts the Stars payment and its refund in the revenue report, once each', async () => {
      await expect
        .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${p.projectId}/reports/revenue`)).body, {
          timeout: 10_000,
        })
        .toEqual([{ currency: 'XTR', totalAmount: 250, refundedAmount: 250, netAmount: 0, payments: 1, refunds: 1 }]);
    });
  });
}

describe('with the service down', () => {
  it('the bot answers every update, and the events arrive once the service is back', async () => {
    const p = await provision(srv.url);
    const bot = grammyBot(p, 'outage bot');
    await srv.stop();
    const updates = Array.from({ length: 50 }, (_, i) => ({ ...FIXTURES.message!, update_id: 800_000 + i }));
    for (const u of updates) await bot.handle(u);
    expect(bot.answered).toEqual(updates.map((u) => u.update_id));
    // Let a few delivery attempts fail before the service returns.
    await new Promise((r) => setTimeout(r, 1500));
    srv = await startServer(db.url, { ...env, PORT: String(port) });
    await until(async () => {
      const [r] = await db.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`;
      return r!.n === updates.length;
    });
    expect(bot.stats()).toMatchObject({ dropped: 0, failed: 0, rejected: 0 });
    await bot.close();
  });
});
