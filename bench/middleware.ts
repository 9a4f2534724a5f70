// The framework middleware's cost to a bot: time added per update (median, over the same updates without it) and
// the bot's event-loop delay while the service is down (nothing listens on the port, so every delivery fails and
// retries). Driven through the real grammY and Telegraf with botInfo given: no network but the service's.
//
//   make build && node dist/bench/middleware.js
import { createServer } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Bot } from 'grammy';
import { Telegraf } from 'telegraf';
import { tgIngest as grammyIngest } from '@tg-ingest/grammy';
import { tgIngest as telegrafIngest } from '@tg-ingest/telegraf';
import { median } from './lib/report.js';

const BOT_ID = 7_000_000_001;
const UPDATES = 20_000;
const ROUNDS = 5;

interface Driver {
  handle(update: object): Promise<void>;
  close(): Promise<void>;
}

function update(i: number): object {
  const user = 1_000_000 + (i % 1000);
  return {
    update_id: 1_000_000 + i,
    message: {
      message_id: i + 1,
      from: { id: user, is_bot: false, first_name: 'Ada', username: `u${user}`, language_code: 'en' },
      chat: { id: user, type: 'private', first_name: 'Ada' },
      date: 1_764_000_000 + i,
      text: i % 10 === 0 ? '/start spring' : 'hello there',
      ...(i % 10 === 0 ? { entities: [{ offset: 0, length: 6, type: 'bot_command' }] } : {}),
    },
  };
}

const BOT_INFO = {
  id: BOT_ID,
  is_bot: true,
  first_name: 'Bench',
  username: 'bench_bot',
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
} as never;

function grammy(baseUrl: string | null): Driver {
  const bot = new Bot('1:bench', { botInfo: BOT_INFO });
  const mw = baseUrl === null ? null : grammyIngest({ baseUrl, apiKey: 'tgk_bench', onError: () => undefined });
  if (mw !== null) bot.use(mw);
  bot.on('message', () => undefined);
  return { handle: (u) => bot.handleUpdate(u as never), close: async () => mw?.close() };
}

function telegraf(baseUrl: string | null): Driver {
  const bot = new Telegraf('1:bench');
  bot.botInfo = BOT_INFO;
  const mw = baseUrl === null ? null : telegrafIngest({ baseUrl, apiKey: 'tgk_bench', onError: () => undefined });
  if (mw !== null) bot.use(mw);
  bot.on('message', () => undefined);
  return { handle: (u) => bot.handleUpdate(u as never), close: async () => mw?.close() };
}

/** A port nothing listens on: the service is down. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Median time of one handleUpdate, in µs. */
async function perUpdate(d: Driver, from: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < UPDATES; i++) {
    const u = update(from + i);
    const t0 = process.hrtime.bigint();
    await d.handle(u);
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return median(times);
}

/** The bot's event-loop delay (p50, p99 in ms) under 2,000 updates a second for `seconds`. */
async function loopDelay(d: Driver, from: number, seconds: number): Promise<{ p50: number; p99: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let i = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    for (let k = 0; k < 20; k++) await d.handle(update(from + i++));
    await new Promise((r) => setTimeout(r, 10));
  }
  h.disable();
  return { p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6 };
}

async function main(): Promise<void> {
  const down = `http://127.0.0.1:${await deadPort()}`;
  const rows: string[] = [];
  for (const [name, make] of [
    ['grammy', grammy],
    ['telegraf', telegraf],
  ] as const) {
    const without: number[] = [];
    const withMw: number[] = [];
    const bare = make(null);
    const tracked = make(down);
    // Alternated rounds, so drift of a shared machine falls on both alike.
    for (let r = 0; r < ROUNDS; r++) {
      without.push(await perUpdate(bare, r * UPDATES));
      withMw.push(await perUpdate(tracked, r * UPDATES));
    }
    const added = median(withMw) - median(without);
    const bareDelay = await loopDelay(bare, 10_000_000, 5);
    const downDelay = await loopDelay(tracked, 20_000_000, 5);
    await bare.close();
    await tracked.close();
    rows.push(
      `${name.padEnd(9)} ${median(without).toFixed(2).padStart(8)} ${median(withMw).toFixed(2).padStart(8)} ${added
        .toFixed(2)
        .padStart(
          8,
        )}   ${bareDelay.p50.toFixed(2)}/${bareDelay.p99.toFixed(2)} ms → ${downDelay.p50.toFixed(2)}/${downDelay.p99.toFixed(2)} ms`,
    );
    console.log(`RESULT ${name}_added_per_update ${added.toFixed(2)} us`);
    console.log(`RESULT ${name}_loop_delay_p99_without ${bareDelay.p99.toFixed(2)} ms`);
    console.log(`RESULT ${name}_loop_delay_p99_service_down ${downDelay.p99.toFixed(2)} ms`);
  }
  console.log('\nframework  bare µs  with µs  added µs   event-loop delay p50/p99: bare → with, service down');
  for (const r of rows) console.log(r);
  // The trackers' queues (service down) are given up at close; nothing keeps the process.
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
