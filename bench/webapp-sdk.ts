// What the mini-app SDK costs a page: the script's bytes as the service serves it (minified, and gzipped), and the
// main thread's time per captured event in Chromium. The messenger's web client is played as in the browser tests:
// the mini-app in an iframe, opened with signed launch parameters, sending to the real service. Each round times the
// same messenger events delivered to the same page with the SDK and without it (the library's own handling is in
// both); the difference is the SDK's.
//
//   make build && node dist/bench/webapp-sdk.js
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { Frame, Page } from 'playwright-core';
import { launchChromium } from './lib/chromium.js';
import { freshDatabase, postgres, provision, startService } from './lib/env.js';
import { makeInitData, newSigner } from './lib/initdata.js';
import { launchFragment, startMiniAppPages } from './lib/miniapp-pages.js';
import { median } from './lib/report.js';

const BUNDLE = new URL('../../integrations/webapp/dist/webapp.min.js', import.meta.url);
const GOAL_GZIP_BYTES = 8 * 1024;
const GOAL_MS_PER_EVENT = 0.1;
const EVENTS = 2000;
const ROUNDS = 5;
const MESSENGER_BOT_ID = 8_100_001;

/** Delivers the messenger's button presses to the page, 100 at a time, and returns the main thread's ms per event. */
function timeEvents(frame: Frame, n: number): Promise<number> {
  return frame.evaluate(async (count) => {
    const g = globalThis as any;
    const data = JSON.stringify({ eventType: 'main_button_pressed', eventData: {} });
    let total = 0;
    for (let done = 0; done < count; done += 100) {
      const t0 = g.performance.now();
      for (let i = 0; i < 100; i++) g.dispatchEvent(new g.MessageEvent('message', { data, source: g.parent }));
      total += g.performance.now() - t0;
      // What the client does between batches (its timer, its requests) is not this time.
      await new Promise((r) => setTimeout(r, 25));
    }
    return total / count;
  }, n);
}

async function main(): Promise<void> {
  const bundle = readFileSync(BUNDLE);
  const gzipBytes = gzipSync(bundle, { level: 9 }).length;
  const pg = await postgres();
  const db = await freshDatabase(pg.url);
  const signer = newSigner();
  const service = await startService(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  const pages = await startMiniAppPages(service.url);
  const chrome = await launchChromium();
  const lines: string[] = [];
  try {
    const bot = await provision(service.url, MESSENGER_BOT_ID);
    let user = 9_000_000;
    const open = async (tab: Page, library: 'twa' | 'tma', withSdk: boolean): Promise<Frame> => {
      const initData = makeInitData(signer, {
        messengerBotId: MESSENGER_BOT_ID,
        user: { id: user++, first_name: 'B' },
      });
      const url =
        pages.appUrl(library, withSdk ? { 'bot-id': bot.botId } : null) + launchFragment(initData, 'weba', '#ffffff');
      await tab.evaluate((u) => (globalThis as any).messenger.open(u), url);
      let frame: Frame | undefined;
      for (let i = 0; i < 200 && frame === undefined; i++) {
        frame = tab.frames().find((f) => f.url().includes(`/${library}.html`));
        if (frame === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      await frame!.waitForLoadState('load');
      if (withSdk) await frame!.waitForFunction('window.tgIngest !== undefined');
      else await frame!.waitForFunction(library === 'twa' ? 'window.Telegram?.WebApp' : 'window.telegramApps?.sdk');
      return frame!;
    };
    for (const library of ['twa', 'tma'] as const) {
      const added: number[] = [];
      const bare: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternated: with first in even rounds, without first in odd ones.
        const order = round % 2 === 0 ? [true, false] : [false, true];
        const ms: Record<string, number> = {};
        for (const withSdk of order) {
          const tab = await chrome.context.newPage();
          await tab.goto(`${pages.messengerUrl}/`);
          const frame = await open(tab, library, withSdk);
          ms[String(withSdk)] = await timeEvents(frame, EVENTS);
          await tab.close();
        }
        added.push(ms.true! - ms.false!);
        bare.push(ms.false!);
      }
      const name = library === 'twa' ? "the messenger's telegram-web-app.js" : '@telegram-apps/sdk';
      process.stderr.write(
        `${name}: ${EVENTS} events a round, ${ROUNDS} rounds; main thread per event without the SDK ${median(bare).toFixed(4)} ms, added by it ${added.map((a) => a.toFixed(4)).join(', ')} ms (median ${median(added).toFixed(4)}; goal < ${GOAL_MS_PER_EVENT})\n`,
      );
      lines.push(`RESULT webapp_sdk_${library}_main_thread_per_event ${median(added).toFixed(4)} ms`);
    }
  } finally {
    await chrome.close();
    await pages.close();
    await service.stop();
    await db.drop();
    await pg.stop();
  }
  process.stderr.write(`bundle: ${bundle.length} bytes minified, ${gzipBytes} gzipped (goal ≤ ${GOAL_GZIP_BYTES})\n`);
  console.log(`RESULT webapp_sdk_bundle_min ${bundle.length} bytes`);
  console.log(`RESULT webapp_sdk_bundle_gzip ${gzipBytes} bytes`);
  for (const l of lines) console.log(l);
}

await main();
