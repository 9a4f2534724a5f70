import type { BrowserContext, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, provision, type Provisioned } from '../helpers/api.js';
import { type Chromium, launchChromium } from '../helpers/chromium.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { launchFragment, type MiniAppPages, startMiniAppPages } from '../helpers/miniapp-pages.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { freePort } from '../../src/db/embedded.js';

const signer = newSigner();

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;
let pages: MiniAppPages;
let chrome: Chromium;
let browser: BrowserContext;
const pageProblems: string[] = [];

/** A fixed port: the page loads the SDK from the service, and the SDK sends to where it came from, across a restart. */
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { INITDATA_PUBLIC_KEYS: signer.publicKeyHex, RATE_LIMIT_BURST: '100000', PORT: String(await freePort()) };
  srv = await startServer(db.url, env);
  p = await provision(srv.url);
  pages = await startMiniAppPages(srv.url);
  chrome = await launchChromium();
  browser = chrome.context;
});

afterAll(async () => {
  await chrome?.close();
  await pages?.close();
  await srv?.stop();
  await db?.drop();
});

interface Row {
  event_name: string;
  event_type: string;
  event_date: Date;
  props_string: Record<string, string> | null;
  props_long: Record<string, number> | null;
  props_bool: Record<string, boolean> | null;
  text: string | null;
  channel: string;
}

const rowsOf = (user: number): Promise<Row[]> =>
  db.sql<Row[]>`
    SELECT event_name, event_type, event_date, props_string, props_long, props_bool, text, channel FROM events
    WHERE project_id = ${p.projectId} AND platform_user_id = ${user} ORDER BY event_date, event_name`;

/** Waits until the user's rows include every name, as many times as listed. */
async function rowsWith(user: number, names: string[], timeoutMs = 20_000): Promise<Row[]> {
  let rows: Row[] = [];
  await expect
    .poll(
      async () => {
        rows = await rowsOf(user);
        const have = rows.map((r) => r.event_name);
        return names.filter((n) => {
          const i = have.indexOf(n);
          if (i < 0) return true;
          have.splice(i, 1);
          return false;
        });
      },
      { timeout: timeoutMs, interval: 200 },
    )
    .toEqual([]);
  return rows;
}

async function openMessenger(): Promise<Page> {
  const tab = await browser.newPage();
  tab.setDefaultTimeout(15_000);
  tab.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
  await tab.goto(`${pages.messengerUrl}/`);
  return tab;
}

/** Opens the mini-app in the messenger's iframe and waits for the SDK to start in it. */
async function launch(
  tab: Page,
  library: 'twa' | 'tma',
  user: number,
  attributes: Record<string, string> = {},
  platform = 'weba',
): Promise<Frame> {
  const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: user, first_name: 'Mia' } });
  const url =
    pages.appUrl(library, { 'bot-id': p.botId, ...attributes }) + launchFragment(initData, platform, '#17212b');
  await tab.evaluate((u) => (globalThis as any).messenger.open(u), url);
  let frame: Frame | undefined;
  await expect
    .poll(() => (frame = tab.frames().find((f) => f.url().includes(`/${library}.html`))) !== undefined)
    .toBe(true);
  await frame!.waitForFunction('window.tgIngest !== undefined');
  return frame!;
}

const post = (tab: Page, eventType: string, eventData: unknown = {}) =>
  tab.evaluate(([t, d]) => (globalThis as any).messenger.post(t, d), [eventType, eventData] as const);

/** Lets the iframe's message handlers run before the next step. */
const settle = (frame: Frame) => frame.evaluate(() => new Promise((r) => setTimeout(r, 20)));

let nextUser = 5_100_000;

describe('@tg-ingest/webapp in the messenger web client', () => {
  it('serves one cacheable script any origin may load, gzipped when asked, 304 when current', async () => {
    const plain = await fetch(`${srv.url}/sdk/webapp.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(plain.headers.get('access-control-allow-origin')).toBe('*');
    expect(plain.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(plain.headers.get('content-encoding')).toBeNull();
    const body = await plain.text();
    expect(body).toContain('tgIngest');
    const etag = plain.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    // Node's fetch asks for gzip and inflates: the same script.
    const gz = await call(`${srv.url}/sdk/webapp.js`, { method: 'GET', headers: { 'accept-encoding': 'gzip' } });
    expect([gz.status, gz.headers.get('content-encoding'), gz.text]).toEqual([200, 'gzip', body]);
    const again = await fetch(`${srv.url}/sdk/webapp.js`, {
      headers: { 'if-none-match': `"other", ${etag}`, 'accept-encoding': 'identity' },
    });
    expect([again.status, await again.text(), again.headers.get('etag')]).toEqual([304, '', etag]);
    expect(again.headers.get('content-length')).toBeNull();
    // The gzipped bytes have a tag of their own: the plain one's does not make them current.
    const gzTag = gz.headers.get('etag');
    expect(gzTag).toBe(`${etag.slice(0, -1)}-gz"`);
    const plainTagForGzip = await fetch(`${srv.url}/sdk/webapp.js`, {
      headers: { 'if-none-match': etag, 'accept-encoding': 'gzip' },
    });
    expect(plainTagForGzip.status).toBe(200);
    const gzipRefused = await fetch(`${srv.url}/sdk/webapp.js`, { headers: { 'accept-encoding': 'gzip;q=0' } });
    expect(gzipRefused.headers.get('content-encoding')).toBeNull();
  });

  it("captures the messenger's own script (telegram-web-app.js): every row of the table, the app's texts never", async () => {
    const user = nextUser++;
    const tab = await openMessenger();
    const app = await launch(tab, 'twa', user, { 'capture-page-views': 'true' });
    const open = (await rowsWith(user, ['app_open', 'page_view']))[0]!;
    const session = open.props_string!.session_id!;
    expect(session).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(open).toMatchObject({
      event_name: 'app_open',
      event_type: 'platform',
      channel: 'webapp',
      props_string: { session_id: session, platform: 'weba', version: '8.0', color_scheme: 'dark' },
      props_bool: { is_fullscreen: false, is_expanded: true },
    });
    expect(open.props_long!.viewport_height).toBeGreaterThan(0);

    await post(tab, 'visibility_changed', { is_visible: false });
    await post(tab, 'visibility_changed', { is_visible: true });
    await app.evaluate(() => {
      const w = (globalThis as any).Telegram.WebApp;
      w.MainButton.setText('Pay 5 stars').show();
      w.SecondaryButton.setText('Later').show();
      w.BackButton.show();
      w.SettingsButton.show();
    });
    for (const b of ['main', 'secondary', 'back', 'settings']) await post(tab, `${b}_button_pressed`);
    // What the app opened, then the messenger's answer.
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.openInvoice('https://t.me/$stars_pack_42'));
    await post(tab, 'invoice_closed', { slug: 'stars_pack_42', status: 'paid' });
    await app.evaluate(() =>
      (globalThis as any).Telegram.WebApp.showPopup({
        message: 'Sure?',
        buttons: [{ id: 'yes', type: 'default', text: 'Yes' }],
      }),
    );
    await post(tab, 'popup_closed', { button_id: 'yes' });
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.showScanQrPopup({ text: 'scan' }));
    await post(tab, 'qr_text_received', { data: 'SECRET-QR-TEXT' });
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.readTextFromClipboard());
    let reqId = '';
    await expect
      .poll(async () => {
        const sent = await tab.evaluate(
          () => (globalThis as any).messenger.outgoing() as { eventType: string; eventData: any }[],
        );
        reqId = sent.find((m) => m.eventType === 'web_app_read_text_from_clipboard')?.eventData?.req_id ?? '';
        return reqId;
      })
      .not.toBe('');
    await post(tab, 'clipboard_text_received', { req_id: reqId, data: 'SECRET-CLIPBOARD' });
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.requestWriteAccess());
    await post(tab, 'write_access_requested', { status: 'allowed' });
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.requestContact());
    await post(tab, 'phone_requested', { status: 'cancelled' });
    await post(tab, 'fullscreen_changed', { is_fullscreen: true });
    await post(tab, 'home_screen_added');
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.shareMessage('prepared-1'));
    await post(tab, 'prepared_message_sent');
    await app.evaluate(() => (globalThis as any).Telegram.WebApp.setEmojiStatus('5368324170671202286'));
    await post(tab, 'emoji_status_set');
    await settle(app);
    // The page's own scripts fail: two uncaught errors, an unhandled rejection.
    await app.addScriptTag({ url: '/fail.js' });
    await app.evaluate(() => {
      const g = globalThis as any;
      g.history.pushState({}, '', '/cart?item=7');
      g.location.hash = '#/checkout?step=2';
      g.tgIngest.track({
        eventName: 'coupon_applied',
        eventType: 'interaction',
        propsString: { code: 'X' },
      });
    });
    await settle(app);
    // Closed at once, with events still queued (the client's batch waits up to a second): they leave in beacons.
    await tab.evaluate(() => (globalThis as any).messenger.remove());

    const expected = [
      'app_open',
      'page_view',
      'app_deactivated',
      'app_activated',
      'main_button_clicked',
      'secondary_button_clicked',
      'back_button_clicked',
      'settings_button_clicked',
      'invoice_closed',
      'popup_closed',
      'qr_scanned',
      'clipboard_read',
      'write_access_requested',
      'contact_requested',
      'fullscreen_changed',
      'home_screen_added',
      'share_message_sent',
      'emoji_status_set',
      'app_error',
      'app_error',
      'app_error',
      'page_view',
      'page_view',
      'coupon_applied',
      'app_close',
    ];
    const rows = await rowsWith(user, expected);
    expect(rows).toHaveLength(expected.length);
    const by = (name: string) => rows.filter((r) => r.event_name === name);
    // One session throughout, deactivation and reactivation included.
    expect(new Set(rows.map((r) => r.props_string?.session_id))).toEqual(new Set([session]));
    expect(by('app_deactivated')[0]!.event_type).toBe('platform');
    expect(by('main_button_clicked')[0]).toMatchObject({
      event_type: 'interaction',
      props_string: { button_text: 'Pay 5 stars' },
    });
    expect(by('secondary_button_clicked')[0]!.props_string!.button_text).toBe('Later');
    expect(by('back_button_clicked')[0]!.props_string).toEqual({ session_id: session });
    expect(by('invoice_closed')[0]).toMatchObject({
      event_type: 'payment',
      props_string: { invoice_slug: 'stars_pack_42', status: 'paid' },
    });
    expect(by('popup_closed')[0]!.props_string!.button_id).toBe('yes');
    expect(by('write_access_requested')[0]!.props_string!.status).toBe('allowed');
    expect(by('contact_requested')[0]!.props_string!.status).toBe('cancelled');
    expect(by('fullscreen_changed')[0]).toMatchObject({ event_type: 'platform', props_bool: { is_fullscreen: true } });
    const errors = by('app_error').map((r) => r.props_string!);
    expect(errors.map((e) => e.message.slice(0, 24)).sort()).toEqual([
      'TypeError: nope',
      'Uncaught Error: boom in ',
      'Uncaught Error: failed a',
    ]);
    // The address and initData the third names are stored without the launch parameters' values.
    expect(errors.find((e) => e.message.includes('failed at'))!.message).toContain('tgWebAppData=…');
    expect(errors.find((e) => e.message.startsWith('Uncaught'))!.source).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/fail\.js:\d+:\d+$/,
    );
    expect(errors.every((e) => e.stack!.includes('at '))).toBe(true);
    expect(
      by('page_view')
        .map((r) => r.props_string!.path)
        .sort(),
    ).toEqual(['/cart', '/cart#/checkout', '/twa.html']);
    expect(by('coupon_applied')[0]!.props_string).toEqual({ code: 'X', session_id: session });
    expect(by('app_close')[0]!.props_long!.duration_ms).toBeGreaterThan(0);
    // What the user scanned or copied, and the launch parameters, are stored nowhere.
    const everything = JSON.stringify(rows);
    for (const secret of ['SECRET-QR-TEXT', 'SECRET-CLIPBOARD']) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/(tgWebAppData|auth_date|hash|signature|user)=[^…]/);
    // The page's own three failures, and nothing of the SDK's.
    expect(
      pageProblems
        .splice(0)
        .map((p) => p.slice(0, 24))
        .sort(),
    ).toEqual(['pageerror: boom in a han', 'pageerror: failed at htt', 'pageerror: nope']);
    await tab.close();
  });

  it("captures through @telegram-apps/sdk's bridge: the messenger's protocol, a session per launch, and only the parent's messages", async () => {
    const user = nextUser++;
    const tab = await openMessenger();
    const app = await launch(tab, 'tma', user, {}, 'tdesktop');
    expect(await app.evaluate(() => (globalThis as any).tgIngest.host)).toBe('bridge');
    await rowsWith(user, ['app_open']);
    const sends: [string, unknown][] = [
      ['visibility_changed', { is_visible: false }],
      ['visibility_changed', { is_visible: true }],
      ['main_button_pressed', {}],
      ['secondary_button_pressed', {}],
      ['back_button_pressed', {}],
      ['settings_button_pressed', {}],
      ['invoice_closed', { slug: 'stars_pack_7', status: 'cancelled' }],
      ['popup_closed', { button_id: 'no' }],
      ['qr_text_received', { data: 'SECRET-QR-TEXT' }],
      ['clipboard_text_received', { req_id: 'r1', data: 'SECRET-CLIPBOARD' }],
      ['write_access_requested', { status: 'allowed' }],
      ['phone_requested', { status: 'sent' }],
      ['fullscreen_changed', { is_fullscreen: false }],
      ['home_screen_added', {}],
      ['prepared_message_sent', {}],
      ['emoji_status_set', {}],
      // Not captured: the messenger's housekeeping.
      ['theme_changed', { theme_params: { bg_color: '#ffffff' } }],
      ['viewport_changed', { height: 600, is_expanded: true, is_state_stable: true }],
    ];
    for (const [t, d] of sends) await post(tab, t, d);
    // A native client calls the global receivers the bridge defines: each press is one event.
    await app.evaluate(() => {
      const g = globalThis as any;
      g.Telegram.WebView.receiveEvent('settings_button_pressed', {});
      g.TelegramGameProxy.receiveEvent('settings_button_pressed', {});
    });
    // A frame of the app's own posting as if it were the messenger, and the app posting to itself: not the messenger.
    await app.evaluate(() => {
      const g = globalThis as any;
      const forged = JSON.stringify({ eventType: 'invoice_closed', eventData: { slug: 'forged', status: 'paid' } });
      g.postMessage(forged, '*');
      const child = g.document.createElement('iframe');
      child.srcdoc = `<script>parent.postMessage(${JSON.stringify(forged)}, '*')</script>`;
      g.document.body.appendChild(child);
    });
    await settle(app);
    await app.evaluate(() => new Promise((r) => setTimeout(r, 200)));
    await tab.evaluate(() => (globalThis as any).messenger.remove());
    const expected = [
      'app_open',
      'app_deactivated',
      'app_activated',
      'main_button_clicked',
      'secondary_button_clicked',
      'back_button_clicked',
      'settings_button_clicked',
      'settings_button_clicked',
      'settings_button_clicked',
      'invoice_closed',
      'popup_closed',
      'qr_scanned',
      'clipboard_read',
      'write_access_requested',
      'contact_requested',
      'fullscreen_changed',
      'home_screen_added',
      'share_message_sent',
      'emoji_status_set',
      'app_close',
    ];
    const rows = await rowsWith(user, expected);
    expect(rows.map((r) => r.event_name).sort()).toEqual([...expected].sort());
    const by = (name: string) => rows.find((r) => r.event_name === name)!;
    const session = by('app_open').props_string!.session_id;
    expect(by('app_open').props_string).toEqual({
      session_id: session,
      platform: 'tdesktop',
      version: '8.0',
      color_scheme: 'dark',
    });
    expect(by('main_button_clicked').props_string).toEqual({ session_id: session });
    expect(by('invoice_closed').props_string).toMatchObject({ invoice_slug: 'stars_pack_7', status: 'cancelled' });
    expect(by('popup_closed').props_string!.button_id).toBe('no');
    expect(by('contact_requested').props_string!.status).toBe('sent');
    expect(by('fullscreen_changed').props_bool).toEqual({ is_fullscreen: false });
    const everything = JSON.stringify(rows);
    for (const secret of ['SECRET-QR-TEXT', 'SECRET-CLIPBOARD', 'forged']) expect(everything).not.toContain(secret);

    // The next launch is a new session, later in time.
    const again = await launch(tab, 'tma', user, {}, 'tdesktop');
    const next = await again.evaluate(() => (globalThis as any).tgIngest.sessionId as string);
    expect(next > session!).toBe(true);
    const opens = (await rowsWith(user, ['app_open', 'app_open'])).filter((r) => r.event_name === 'app_open');
    expect(opens.map((r) => r.props_string!.session_id)).toEqual([session, next]);
    expect(pageProblems).toEqual([]);
    await tab.close();
  });

  it('lets a user opt out across launches, and each group be turned off', async () => {
    const user = nextUser++;
    const tab = await openMessenger();
    const app = await launch(tab, 'tma', user);
    await rowsWith(user, ['app_open']);
    await app.evaluate(() => (globalThis as any).tgIngest.optOut());
    // What the client kept for a later launch is deleted with the choice.
    expect(
      await app.evaluate((bot) => (globalThis as any).localStorage.getItem(`tg-ingest:outbox:${bot}`), p.botId),
    ).toBeNull();
    await post(tab, 'main_button_pressed');
    await app.evaluate(() => (globalThis as any).tgIngest.track({ eventName: 'while_out', eventType: 'interaction' }));
    await settle(app);
    await tab.evaluate(() => (globalThis as any).messenger.remove());
    // The next launch remembers: nothing, not even its app_open, until the user opts in again.
    const next = await launch(tab, 'tma', user);
    expect(await next.evaluate(() => (globalThis as any).tgIngest.optedOut)).toBe(true);
    await post(tab, 'popup_closed', { button_id: 'x' });
    await settle(next);
    await next.evaluate(() => {
      const sdk = (globalThis as any).tgIngest;
      sdk.optIn();
      sdk.track({ eventName: 'back_in', eventType: 'interaction' });
    });
    await tab.evaluate(() => (globalThis as any).messenger.remove());
    await rowsWith(user, ['app_open', 'back_in']);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await rowsOf(user)).map((r) => r.event_name).sort()).toEqual(['app_open', 'back_in']);

    // Groups off by data- attributes: no lifecycle, no buttons; dialogs still on; at most 3 errors (of 25).
    const quiet = nextUser++;
    const off = await launch(tab, 'tma', quiet, {
      'capture-lifecycle': 'false',
      'capture-buttons': 'off',
      'max-errors': '3',
    });
    await post(tab, 'main_button_pressed');
    await post(tab, 'visibility_changed', { is_visible: false });
    await post(tab, 'popup_closed', { button_id: 'ok' });
    await off.addScriptTag({
      content: "for (let i = 0; i < 25; i++) setTimeout(() => { throw new Error('e' + i); });",
    });
    await off.evaluate(() => new Promise((r) => setTimeout(r, 100)));
    await tab.evaluate(() => (globalThis as any).messenger.remove());
    await rowsWith(quiet, ['popup_closed', 'app_error', 'app_error', 'app_error']);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await rowsOf(quiet)).map((r) => r.event_name).sort()).toEqual([
      'app_error',
      'app_error',
      'app_error',
      'popup_closed',
    ]);
    expect(pageProblems.splice(0)).toHaveLength(25);
    await tab.close();
  });

  it('loses nothing when the service is down for 20 s: what the closed mini-app held leaves with the next launch, once', async () => {
    const user = nextUser++;
    const tab = await openMessenger();
    const app = await launch(tab, 'tma', user);
    await rowsWith(user, ['app_open']);
    await srv.stop();
    await post(tab, 'main_button_pressed');
    await post(tab, 'invoice_closed', { slug: 'during_outage', status: 'paid' });
    await app.evaluate(() =>
      (globalThis as any).tgIngest.track({ eventName: 'offline_tap', eventType: 'interaction' }),
    );
    await settle(app);
    // The app is closed while the service is down: its beacons find no one.
    await tab.evaluate(() => (globalThis as any).messenger.remove());
    await new Promise((r) => setTimeout(r, 20_000));
    srv = await startServer(db.url, env);
    await launch(tab, 'tma', user);
    const rows = await rowsWith(user, [
      'app_open',
      'main_button_clicked',
      'invoice_closed',
      'offline_tap',
      'app_close',
      'app_open',
    ]);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await rowsOf(user)).length).toBe(rows.length);
    expect(rows).toHaveLength(6);
    await tab.close();
  }, 60_000);
});
