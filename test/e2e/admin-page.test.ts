// The admin page at /admin/ driven in headless Chromium: every step goes through the UI, and its
// effect is checked over HTTP the way a bot backend would see it.
import { mkdirSync, readFileSync } from 'node:fs';
import type { BrowserContext, Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, serverEvent } from '../helpers/api.js';
import { type Chromium, launchChromium } from '../helpers/chromium.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let chrome: Chromium;
let browser: BrowserContext;
let page: Page;
/** Uncaught page errors and console errors other than the failed requests the test provokes. */
const pageProblems: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { INITDATA_PUBLIC_KEYS: signer.publicKeyHex });
  chrome = await launchChromium({
    viewport: { width: 1280, height: 900 },
    // Money is formatted for the browser's locale; the expectations below are written in en-US.
    locale: 'en-US',
    // Away from UTC: every time the page shows must still be UTC, as its reports' days are.
    timezoneId: 'Asia/Tokyo',
  });
  browser = chrome.context;
  page = browser.pages()[0] ?? (await browser.newPage());
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // Chromium logs every non-2xx fetch as "Failed to load resource"; the test provokes some on purpose.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
      pageProblems.push(`console: ${msg.text()}`);
  });
});

afterAll(async () => {
  await chrome?.close();
  await srv?.stop();
  await db?.drop();
});

const byTestId = (id: string) => page.getByTestId(id);

/** Signs in on `p`, a tab with its own (empty) session storage unless it is the main page. */
async function signIn(p: Page): Promise<void> {
  await p.getByTestId('login-token').fill(ADMIN_TOKEN);
  await p.getByTestId('login-submit').click();
  await p.getByTestId('project-create-form').waitFor();
}

/**
 * Holds the page's first GET matching `url` once the service has answered it: the answer reaches the page
 * only on release(), as a slow network delivers an answer given before a change made meanwhile.
 */
async function holdFirstAnswer(url: RegExp) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let answeredNow!: () => void;
  let missing!: (err: Error) => void;
  const answered = new Promise<void>((resolve, reject) => {
    answeredNow = resolve;
    missing = reject;
  });
  const noRequest = setTimeout(() => missing(new Error(`the page asked for nothing matching ${url} in 10 s`)), 10_000);
  let deliveredNow!: () => void;
  const delivered = new Promise<void>((resolve) => (deliveredNow = resolve));
  let holding = true;
  const handler = async (route: Route) => {
    if (!holding || route.request().method() !== 'GET') return route.continue();
    holding = false;
    const response = await route.fetch();
    clearTimeout(noRequest);
    answeredNow();
    await held;
    await route.fulfill({ response });
    deliveredNow();
  };
  await page.route(url, handler);
  return {
    answered,
    release,
    /** Once the page has had the held answer and time to draw it (or, fixed, to drop it). */
    settled: async () => {
      await delivered;
      await page.evaluate('new Promise((resolve) => setTimeout(resolve, 500))');
    },
    unroute: () => page.unroute(url, handler),
  };
}

/** A fresh tab: no token, no remembered project. */
async function freshTab(): Promise<Page> {
  const tab = await browser.newPage();
  tab.setDefaultTimeout(10_000);
  tab.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
  await tab.goto(`${srv.url}/admin/`);
  return tab;
}

/** Opens a project by its address on the main page, signing in if needed. */
async function openProject(projectId: string): Promise<void> {
  // Only a real load reads the address: a change of the #fragment alone would not.
  await page.goto('about:blank');
  await page.goto(`${srv.url}/admin/#project=${projectId}`);
  await page.locator('[data-testid="login-form"]:visible, [data-testid="project-detail"]:visible').first().waitFor();
  if (await byTestId('login-form').isVisible()) await signIn(page);
  await expect.poll(() => byTestId('project-id').textContent()).toBe(`project ${projectId}`);
}

/** What a browser reports when the user switches tabs; headless Chromium has no other tab to switch to. */
function setTabHidden(hidden: boolean): Promise<void> {
  // A string, as elsewhere here: the tests are type-checked without the DOM library.
  return page.evaluate(`(() => {
    if (${hidden}) {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    } else {
      // The own properties shadowed the real getters on Document.prototype.
      delete document.hidden;
      delete document.visibilityState;
    }
    document.dispatchEvent(new Event('visibilitychange'));
  })()`);
}

/** The values of an attribute over every element a locator matches, in document order. */
async function attrs(locator: Locator, name: string): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0, n = await locator.count(); i < n; i++) out.push(await locator.nth(i).getAttribute(name));
  return out;
}

/** How many live views the service has open, as /metrics tells. */
async function liveViewers(): Promise<number> {
  const m = /^tg_ingest_live_viewers (\d+)/m.exec((await admin(srv.url, 'GET', '/metrics')).text);
  return m ? Number(m[1]) : NaN;
}

const purchaseSchema = (minimum: number) => ({
  type: 'object',
  required: ['propsLong'],
  properties: {
    eventType: { const: 'payment' },
    propsLong: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum } } },
  },
});
const purchase = (over: Record<string, unknown> = {}) =>
  serverEvent({ eventName: 'purchase', eventType: 'payment', propsLong: { amount: 100 }, ...over });

const payment = (amount: number, currency: string) =>
  serverEvent({
    eventOrigin: 'platform',
    eventType: 'payment',
    eventName: 'successful_payment',
    propsString: { 'tg.currency': currency },
    propsLong: { 'tg.total_amount': amount },
  });

describe('admin page', () => {
  it('serves the page and its assets with a strict CSP, apart from the API', async () => {
    for (const path of ['/admin', '/admin/']) {
      const r = await call(`${srv.url}${path}`);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-cache');
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(r.text).toContain('/admin/page/admin.js');
      expect(r.text).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>/);
    }
    const js = await call(`${srv.url}/admin/page/admin.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.text).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    const css = await call(`${srv.url}/admin/page/admin.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await call(`${srv.url}/admin/page/nope.js`)).status).toBe(404);
    // The API next door is untouched.
    expect((await call(`${srv.url}/admin/projects`)).status).toBe(401);
  });

  it('says on the sign-in form where the admin token is', async () => {
    await page.goto(`${srv.url}/admin/`);
    const hint = byTestId('login-token-hint');
    expect(await hint.isVisible()).toBe(true);
    const text = (await hint.textContent()) ?? '';
    expect(text).toContain('admin-token');
    expect(text).toContain('DATA_DIR');
    expect(text).toContain('cat .data/admin-token');
    expect(text).toContain('ADMIN_TOKEN');
    // Read out with the field, not only seen next to it.
    expect((await byTestId('login-token').getAttribute('aria-describedby'))?.split(' ')).toContain(
      await hint.getAttribute('id'),
    );
    // The longer form still fits a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(
      await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'),
    ).toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('provisions a project, a bot and a token, shows live counts, and switches and revokes', async () => {
    await page.goto(`${srv.url}/admin/`);

    // A wrong token is refused with a clear message and not kept.
    await byTestId('login-token').fill('not-the-admin-token');
    await byTestId('login-submit').click();
    await expect.poll(() => byTestId('login-error').textContent()).toContain('not accepted');
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);

    await byTestId('login-token').fill(ADMIN_TOKEN);
    await byTestId('login-submit').click();
    await byTestId('project-create-form').waitFor();
    expect(await page.evaluate<string | null>("sessionStorage.getItem('tg-ingest.adminToken')")).toBe(ADMIN_TOKEN);
    // No project yet, so none is open.
    expect(await byTestId('project-detail').isVisible()).toBe(false);

    // A name that would be markup if it were ever inserted as HTML.
    const projectName = 'Shop <img src=x onerror=alert(1)> & co';
    await byTestId('project-name').fill(projectName);
    await byTestId('project-allowance').fill('5000');
    await byTestId('project-create-submit').click();
    await expect.poll(() => byTestId('project-title').textContent()).toBe(projectName);
    expect(await page.locator('img').count()).toBe(0);
    const projectId = await byTestId('project-row').getAttribute('data-project-id');
    expect(projectId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await admin(srv.url, 'GET', `/admin/projects/${projectId}`)).body.eventAllowance).toBe(5000);

    // Allowance: empty means unlimited. A refresh round answered before the change and arriving after it
    // (held here) must not put the old allowance back.
    const round = await holdFirstAnswer(/\/usage$/);
    await round.answered;
    await byTestId('allowance-input').fill('');
    await byTestId('allowance-save').click();
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${projectId}`)).body.eventAllowance)
      .toBeNull();
    await expect.poll(() => byTestId('usage-allowance').textContent()).toBe('unlimited');
    // The held round says "Updated …" once it has drawn its answer.
    await page.evaluate("document.getElementById('live-updated').textContent = ''");
    round.release();
    await expect.poll(() => page.locator('#live-updated').textContent()).not.toBe('');
    expect(await byTestId('usage-allowance').textContent()).toBe('unlimited');
    await round.unroute();

    // A bot linked to the project.
    await byTestId('bot-name').fill('Shop bot');
    await byTestId('bot-create-submit').click();
    const row = byTestId('bot-row');
    await row.waitFor();
    const botId = await row.getAttribute('data-bot-id');
    const bot = (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body;
    expect(bot).toMatchObject({
      projectId,
      name: 'Shop bot',
      messengerBotId: null,
      miniAppIngest: true,
      apiIngest: true,
    });

    // Messenger bot id edited in the row.
    await row.getByTestId('bot-messenger-id-input').fill('7123456789');
    await row.getByTestId('bot-messenger-id-save').click();
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body.messengerBotId)
      .toBe(7123456789);

    // Token dialog: create one and read its value, shown once. The list the dialog asked for on opening
    // (empty, held here until the token is made) must not hide the new token.
    const opening = await holdFirstAnswer(/\/tokens$/);
    await row.getByTestId('bot-tokens').click();
    const dialog = byTestId('token-dialog');
    await dialog.waitFor();
    await opening.answered;
    await dialog.getByTestId('token-create').click();
    const valueBox = dialog.getByTestId('token-new-value');
    await expect.poll(() => valueBox.inputValue()).not.toBe('');
    const token = await valueBox.inputValue();
    expect(await dialog.getByTestId('token-warning').isVisible()).toBe(true);
    await dialog.getByTestId('token-copy').click();
    await expect.poll(() => dialog.getByTestId('token-copy-status').textContent()).toMatch(/Copied|Selected/);
    await expect.poll(() => dialog.getByTestId('token-row').count()).toBe(1);
    opening.release();
    await opening.settled();
    expect(await dialog.getByTestId('token-row').count()).toBe(1);
    await opening.unroute();
    expect(await dialog.getByTestId('token-last-used').textContent()).toBe('never');

    // The token works, and the live view picks the event up.
    expect(Number(await byTestId('stat-accepted').getAttribute('data-value'))).toBe(0);
    const sent = await postBotApi(srv.url, token, { events: [serverEvent(), serverEvent()] });
    expect(sent.status).toBe(202);
    expect(sent.body.accepted).toBe(2);
    await expect
      .poll(() => byTestId('stat-accepted').getAttribute('data-value'), { timeout: 10_000, interval: 250 })
      .toBe('2');
    expect(await byTestId('live-chart').locator('svg rect.s-accepted').count()).toBeGreaterThan(0);

    // Its own rate limit, set in the dialog: shown there, and the token's bucket follows at once.
    expect(await dialog.getByTestId('token-limit-text').textContent()).toBe('default');
    await dialog.getByTestId('token-limit-edit').click();
    await dialog.getByTestId('token-limit-per-min').fill('6000');
    await dialog.getByTestId('token-limit-burst').fill('1234');
    await dialog.getByTestId('token-limit-save').click();
    await expect.poll(() => dialog.getByTestId('token-limit-text').textContent()).toBe('6,000/min, burst 1,234');
    const limited = await postBotApi(srv.url, token, { events: [serverEvent()] });
    expect([limited.status, limited.headers.get('ratelimit-limit')]).toEqual([202, '1234']);

    // Closing the dialog drops the value; reopening shows the list only.
    await dialog.getByTestId('token-dialog-close').click();
    await dialog.waitFor({ state: 'hidden' });
    await row.getByTestId('bot-tokens').click();
    await dialog.waitFor();
    expect(await dialog.getByTestId('token-new').isVisible()).toBe(false);
    expect(await page.content()).not.toContain(token);
    await dialog.getByTestId('token-dialog-close').click();

    // API ingest off: the bot backend gets 403; back on: 202.
    const apiSwitch = row.getByTestId('toggle-apiIngest');
    expect(await apiSwitch.isChecked()).toBe(true);
    await apiSwitch.click();
    await expect.poll(async () => (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body.apiIngest).toBe(false);
    expect(await apiSwitch.isChecked()).toBe(false);
    const off = await postBotApi(srv.url, token, { events: [serverEvent()] });
    expect(off.status).toBe(403);
    expect(off.body.error).toBe('api_ingest_disabled');
    await expect.poll(() => apiSwitch.isEnabled()).toBe(true);
    await apiSwitch.click();
    await expect.poll(async () => (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body.apiIngest).toBe(true);
    expect((await postBotApi(srv.url, token, { events: [serverEvent()] })).status).toBe(202);

    // Revoke through the dialog: the token is refused at once.
    await row.getByTestId('bot-tokens').click();
    await dialog.waitFor();
    const tokenRow = dialog.getByTestId('token-row');
    await tokenRow.getByTestId('token-revoke').click();
    await tokenRow.getByTestId('token-revoke-confirm').click();
    await expect.poll(() => tokenRow.getAttribute('data-revoked')).toBe('true');
    expect(await tokenRow.getByTestId('token-status').textContent()).toContain('revoked');
    const revoked = await postBotApi(srv.url, token, { events: [serverEvent()] });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error).toBe('api_key_invalid');
    await dialog.getByTestId('token-dialog-close').click();

    // Phone width: neither the page nor the token dialog overflows sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(
      await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'),
    ).toBe(true);
    await row.getByTestId('bot-tokens').click();
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('token-row').count()).toBe(1);
    expect(await dialog.evaluate((d) => d.scrollWidth <= d.clientWidth)).toBe(true);
    const box = await dialog.boundingBox();
    expect(box!.x >= 0 && box!.x + box!.width <= 390).toBe(true);
    await dialog.getByTestId('token-dialog-close').click();
    await page.setViewportSize({ width: 1280, height: 900 });

    // A reload keeps the session and the selected project, and shows no sign-in form while the stored
    // token is checked (held here until looked at); signing out forgets the token.
    const check = await holdFirstAnswer(/\/admin\/projects$/);
    await page.reload({ waitUntil: 'commit' });
    await check.answered;
    expect(await byTestId('login-form').isVisible()).toBe(false);
    expect(await byTestId('signin-checking').isVisible()).toBe(true);
    check.release();
    await expect.poll(() => byTestId('project-title').textContent()).toBe(projectName);
    expect(await byTestId('signin-checking').isVisible()).toBe(false);
    await check.unroute();
    await byTestId('sign-out').click();
    await byTestId('login-form').waitFor();
    expect(await page.evaluate<string | null>("sessionStorage.getItem('tg-ingest.adminToken')")).toBeNull();
    expect(await byTestId('project-detail').isVisible()).toBe(false);

    expect(pageProblems).toEqual([]);
  }, 60_000);

  // Runs while the project made above is the only one.
  it('opens the only project after sign-in; with several, the one this tab had open, else none', async () => {
    const projects = (await admin(srv.url, 'GET', '/admin/projects')).body as { projectId: string; name: string }[];
    expect(projects).toHaveLength(1);
    const only = projects[0]!;

    const tab = await freshTab();
    await signIn(tab);
    await expect.poll(() => tab.getByTestId('project-title').textContent()).toBe(only.name);
    expect(await tab.getByTestId('project-detail').isVisible()).toBe(true);
    expect(await tab.getByTestId('project-row').getByTestId('project-select').getAttribute('aria-current')).toBe(
      'true',
    );
    await expect.poll(() => tab.getByTestId('usage-month').textContent()).toMatch(/^\d{4}-\d{2}$/);
    await tab.close();

    // A second project: a new tab chooses nothing.
    const second = (await admin(srv.url, 'POST', '/admin/projects', { name: 'Second shop' })).body.projectId as string;
    const tab2 = await freshTab();
    await signIn(tab2);
    await expect.poll(() => tab2.getByTestId('project-row').count()).toBe(2);
    expect(await tab2.getByTestId('project-detail').isVisible()).toBe(false);

    // Signed out and in again, the tab comes back to the project it had open (the address no longer names it).
    await tab2
      .locator(`[data-testid="project-row"][data-project-id="${second}"]`)
      .getByTestId('project-select')
      .click();
    await expect.poll(() => tab2.getByTestId('project-title').textContent()).toBe('Second shop');
    await tab2.getByTestId('sign-out').click();
    await tab2.getByTestId('login-form').waitFor();
    expect(new URL(tab2.url()).hash).toBe('');
    expect(await tab2.getByTestId('project-detail').isVisible()).toBe(false);
    await signIn(tab2);
    await tab2.getByTestId('project-detail').waitFor();
    expect(await tab2.getByTestId('project-title').textContent()).toBe('Second shop');
    expect(new URL(tab2.url()).hash).toBe(`#project=${second}`);
    await tab2.close();
    expect(pageProblems).toEqual([]);
  });

  it('refreshes usage together with the live view, without a click, and stops polling while the tab is hidden', async () => {
    const own = await provision(srv.url);
    const requests: string[] = [];
    const onRequest = (r: { url(): string }) => {
      const m = /\/admin\/projects\/[^/]+\/(stats|usage|reports\/revenue)$/.exec(new URL(r.url()).pathname);
      if (m) requests.push(m[1]!);
    };
    page.on('request', onRequest);
    try {
      await openProject(own.projectId);
      await expect.poll(() => byTestId('usage-billed').getAttribute('data-value')).toBe('0');

      const sent = await postBotApi(srv.url, own.token, { events: [serverEvent(), serverEvent(), serverEvent()] });
      expect(sent.status).toBe(202);
      // Without a click: the 3 s loop has to bring both the live count and the month's usage.
      await expect
        .poll(() => byTestId('stat-accepted').getAttribute('data-value'), { timeout: 10_000, interval: 250 })
        .toBe('3');
      await expect
        .poll(() => byTestId('usage-billed').getAttribute('data-value'), { timeout: 10_000, interval: 250 })
        .toBe('3');
      await expect
        .poll(() => byTestId('usage-stored').getAttribute('data-value'), { timeout: 10_000, interval: 250 })
        .toBe('3');

      // One loop: every round asks for both, so the counts never drift apart.
      const count = (kind: string) => requests.filter((k) => k === kind).length;
      requests.length = 0;
      // A round every 3 s after the last one answered: two of them, however slow the answers.
      await expect.poll(() => count('stats'), { timeout: 15_000, interval: 250 }).toBeGreaterThanOrEqual(2);
      expect(Math.abs(count('stats') - count('usage'))).toBeLessThanOrEqual(1);

      // Hidden: nothing is asked (a round already in flight may still land).
      await setTabHidden(true);
      await page.waitForTimeout(500);
      requests.length = 0;
      await page.waitForTimeout(4_000);
      expect(requests).toEqual([]);

      // Visible again: a round at once, with revenue, then the loop goes on.
      await setTabHidden(false);
      await expect
        .poll(() => [count('stats'), count('usage'), count('reports/revenue')], { timeout: 2_500, interval: 50 })
        .toEqual([1, 1, 1]);
      await expect.poll(() => count('stats'), { timeout: 5_000, interval: 250 }).toBe(2);
    } finally {
      page.off('request', onRequest);
    }
    expect(pageProblems).toEqual([]);
  }, 60_000);

  it("shows revenue in the currency's units, Stars without decimals, big totals to the last digit", async () => {
    const own = await provision(srv.url);
    const big = Number.MAX_SAFE_INTEGER; // two of them sum beyond 2^53: the API answers a string
    const sent = await postBotApi(srv.url, own.token, {
      events: [
        payment(1999, 'USD'),
        { ...payment(500, 'USD'), eventName: 'refunded_payment' },
        payment(1999, 'XTR'),
        payment(big, 'JPY'),
        payment(big, 'JPY'),
        payment(big, 'EUR'),
        payment(big, 'EUR'),
        // Ten currencies in all: the eight paid in most are charted, the rest named.
        ...['XXX', 'YER', 'ZAR', 'ZMW', 'ZWG', 'ZWL'].map((c) => payment(100, c)),
      ],
    });
    expect(sent.status).toBe(202);
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/reports/revenue`)).body)
      .toContainEqual(expect.objectContaining({ currency: 'JPY', totalAmount: '18014398509481982' }));

    await openProject(own.projectId);
    await byTestId('revenue-refresh').click();
    const total = (currency: string) =>
      page
        .locator(`[data-testid="revenue-row"][data-currency="${currency}"] [data-testid="revenue-total"]`)
        .textContent();
    await expect.poll(() => total('USD')).toBe('$19.99');
    // One figure for revenue across the page: net of refunds, as the reports view's, with paid and refunded beside.
    const cell = (currency: string, id: string) =>
      page.locator(`[data-testid="revenue-row"][data-currency="${currency}"] [data-testid="${id}"]`).textContent();
    expect([await cell('USD', 'revenue-net'), await cell('USD', 'revenue-refunded')]).toEqual(['$14.99', '$5.00']);
    await expect
      .poll(() => page.locator('[data-testid="report-revenue-net"][data-currency="USD"]').textContent())
      .toBe('USD net $14.99');
    expect(await total('XTR')).toMatch(/^(1,999 XTR|⭐ 1,999)$/);
    expect(await total('JPY')).toBe('¥18,014,398,509,481,982');
    expect(await total('EUR')).toBe('€180,143,985,094,819.82');
    // The reports' revenue: a chart per currency, its axis labelled with it and in its units ($, not cents; whole
    // stars). The axis's first and last marks are in the chart's label, as drawn on the canvas.
    const lines = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/reports/revenue?by=day`)).body;
    const charts = page.locator('[data-testid="report-revenue-chart"]');
    const charted = [...lines]
      .sort((a: { payments: number }, b: { payments: number }) => b.payments - a.payments)
      .slice(0, 8)
      .map((l: { currency: string }) => l.currency);
    await expect.poll(() => attrs(charts, 'data-currency')).toEqual(charted);
    expect(await byTestId('report-revenue-more').textContent()).toBe(
      '2 more currencies: totals above, days in the CSV.',
    );
    const scale = async (currency: string) => {
      const label = await page
        .locator(`[data-testid="report-revenue-chart"][data-currency="${currency}"]`)
        .getAttribute('aria-label');
      const m = /^Net revenue per day in (\w+), its axis marked from (.+) to (.+)$/.exec(label ?? '');
      return m ? { currency: m[1], from: m[2], to: m[3] } : label;
    };
    const usd = await scale('USD');
    expect(usd).toMatchObject({ currency: 'USD', from: expect.stringMatching(/^\$0$/) });
    const usdTop = Number((usd as { to: string }).to.replace(/[$,]/g, ''));
    expect(usdTop).toBeGreaterThanOrEqual(10);
    expect(usdTop).toBeLessThanOrEqual(20);
    const xtr = await scale('XTR');
    expect(xtr).toMatchObject({ currency: 'XTR', to: expect.stringMatching(/^[0-9,]+$/) });
    const xtrTop = Number((xtr as { to: string }).to.replace(/,/g, ''));
    expect(xtrTop).toBeGreaterThanOrEqual(1000);
    expect(xtrTop).toBeLessThanOrEqual(2500);
    expect(pageProblems).toEqual([]);
  });

  it("edits the tracking plan: text that is not JSON is refused before sending, ajv's refusal is shown, versions count up, and the plan is in force", async () => {
    const own = await provision(srv.url);
    const planUrl = `/admin/projects/${own.projectId}/tracking-plan`;
    const puts: string[] = [];
    const gets: string[] = [];
    const onRequest = (r: { method(): string; url(): string }) => {
      if (r.method() === 'PUT' && new URL(r.url()).pathname === planUrl) puts.push(r.url());
      if (r.method() === 'GET' && new URL(r.url()).pathname === planUrl) gets.push(r.url());
    };
    page.on('request', onRequest);
    try {
      await openProject(own.projectId);
      const editor = byTestId('plan-text');
      const error = byTestId('plan-error');
      // No plan yet: the starter template, which changes nothing.
      await expect.poll(() => editor.isEnabled()).toBe(true);
      expect(JSON.parse(await editor.inputValue())).toEqual({ mode: 'warn', unplannedEvents: 'allow', events: {} });
      expect(await byTestId('plan-none').isVisible()).toBe(true);
      // Nothing to delete: no button at all, rather than a faded one; and no plan asked for (no 404 in the console).
      expect(await byTestId('plan-delete').count()).toBe(0);
      expect(gets).toEqual([]);

      // Not JSON: said at once, and nothing is sent.
      await editor.fill('{"mode": "block", events: {}}');
      expect(await byTestId('plan-dirty').isVisible()).toBe(true);
      await byTestId('plan-save').click();
      await expect.poll(() => error.textContent()).toContain('not valid JSON');
      expect(await editor.getAttribute('aria-invalid')).toBe('true');
      expect(puts).toEqual([]);

      // A schema ajv cannot compile: the service's own words, next to the editor, with the schema's name selected.
      const broken = { mode: 'block', unplannedEvents: 'allow', events: { purchase: { type: 'integr' } } };
      const refused = await admin(srv.url, 'PUT', planUrl, broken);
      expect(refused.status).toBe(400);
      await editor.fill(JSON.stringify(broken, null, 2));
      await byTestId('plan-save').click();
      await expect.poll(() => error.textContent()).toContain(refused.body.message);
      expect(await error.textContent()).toContain(refused.body.details.error);
      expect(
        await page.evaluate<string>(
          "(() => { const t = document.getElementById('plan-text'); return t.value.slice(t.selectionStart, t.selectionEnd); })()",
        ),
      ).toBe('"purchase"');
      expect(puts).toHaveLength(1);
      expect((await admin(srv.url, 'GET', planUrl)).status).toBe(404);

      // A valid plan: version 1, then 2.
      const warnPlan = { mode: 'warn', unplannedEvents: 'allow', events: { purchase: purchaseSchema(1) } };
      await editor.fill(JSON.stringify(warnPlan));
      await byTestId('plan-save').click();
      await expect.poll(() => byTestId('plan-version').getAttribute('data-value')).toBe('1');
      expect(await error.isVisible()).toBe(false);
      expect(await byTestId('plan-dirty').isVisible()).toBe(false);
      expect(JSON.parse(await editor.inputValue())).toEqual(warnPlan);
      const blockPlan = { ...warnPlan, mode: 'block' };
      await editor.fill(JSON.stringify(blockPlan));
      await byTestId('plan-save').click();
      await expect.poll(() => byTestId('plan-version').getAttribute('data-value')).toBe('2');
      const stored = (await admin(srv.url, 'GET', planUrl)).body;
      expect(stored).toEqual({ ...blockPlan, version: 2, updatedAt: expect.any(String) });
      expect(await byTestId('plan-updated').locator('time').getAttribute('datetime')).toBe(stored.updatedAt);

      // In force: an event that breaks its schema is rejected, one that fits is stored.
      const cheap = purchase({ propsLong: { amount: 0 } });
      const sent = await postBotApi(srv.url, own.token, { events: [cheap, purchase()] });
      expect(sent.status).toBe(202);
      expect(sent.body).toMatchObject({ accepted: 1, rejected: 1 });
      expect(sent.body.diagnostics).toContainEqual(
        expect.objectContaining({ event_id: cheap.eventId, code: 'schema_violation', severity: 'error' }),
      );

      // A reload shows the stored plan, not the template.
      await page.reload();
      await expect.poll(() => byTestId('plan-version').getAttribute('data-value')).toBe('2');
      expect(JSON.parse(await editor.inputValue())).toEqual(blockPlan);

      // Deleted after a confirmation: the template again, and the same event goes through.
      await byTestId('plan-delete').click();
      await byTestId('plan-delete-confirm').click();
      await expect.poll(() => byTestId('plan-none').isVisible()).toBe(true);
      expect((await admin(srv.url, 'GET', planUrl)).status).toBe(404);
      expect(
        (await postBotApi(srv.url, own.token, { events: [purchase({ propsLong: { amount: 0 } })] })).body,
      ).toMatchObject({ accepted: 1, rejected: 0 });
    } finally {
      page.off('request', onRequest);
    }
    expect(pageProblems).toEqual([]);
  });

  it('quarantine: lists rejected events by code, shows one, replays after a dry run once the plan is relaxed, and deletes', async () => {
    const own = await provision(srv.url);
    const planUrl = `/admin/projects/${own.projectId}/tracking-plan`;
    expect(
      (
        await admin(srv.url, 'PUT', planUrl, {
          mode: 'block',
          unplannedEvents: 'block',
          events: { purchase: purchaseSchema(1) },
        })
      ).status,
    ).toBe(200);
    const cheap = purchase({ propsLong: { amount: 0 } });
    const signup = serverEvent({ eventName: 'signup' });
    const login = serverEvent({ eventName: 'login' });
    const broken = serverEvent({
      eventName: 'purchase',
      eventType: 'payment',
      propsLong: { amount: 5 },
      platformUserId: 'not a number',
    });
    // One request each: the quarantine's order (newest first) is then the reverse of this.
    for (const e of [purchase(), cheap, signup, login, broken])
      expect((await postBotApi(srv.url, own.token, { events: [e] })).status).toBeLessThan(500);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body).toMatchObject({
      eventsStored: 1,
      eventsBilled: 1,
    });

    await openProject(own.projectId);
    const rows = byTestId('quarantine-row');
    const row = (e: Record<string, any>) =>
      page.locator(`[data-testid="quarantine-row"][data-event-id="${e.eventId}"]`);
    await expect.poll(() => rows.count()).toBe(4);
    expect(await attrs(rows, 'data-event-id')).toEqual([broken, login, signup, cheap].map((e) => e.eventId));
    expect(await row(signup).getByTestId('quarantine-name').textContent()).toBe('signup');
    expect(await row(signup).getByTestId('quarantine-codes').textContent()).toBe('event_unplanned');
    expect(await row(broken).getByTestId('quarantine-codes').textContent()).toBe('platform_user_id_invalid');
    const chip = (code: string) => page.locator(`[data-testid="quarantine-code"][data-code="${code}"]`);
    expect(await chip('event_unplanned').getByTestId('quarantine-code-count').textContent()).toBe('2');
    expect(await chip('schema_violation').getByTestId('quarantine-code-count').textContent()).toBe('1');
    expect(await chip('platform_user_id_invalid').getByTestId('quarantine-code-count').textContent()).toBe('1');

    // A row opens the event as sent, with its reasons.
    await row(cheap).getByTestId('quarantine-view').click();
    const detail = byTestId('quarantine-detail');
    await detail.waitFor();
    expect(JSON.parse((await detail.getByTestId('quarantine-event').textContent()) ?? '')).toEqual(cheap);
    expect(await attrs(detail.getByTestId('quarantine-diagnostic'), 'data-code')).toEqual(['schema_violation']);
    expect(await detail.getByTestId('quarantine-diagnostic').textContent()).toContain('props_long.amount');
    expect(await detail.getByTestId('quarantine-truncated').isVisible()).toBe(false);

    // At phone width the table, the detail and the replay controls fit.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(
      await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'),
    ).toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });

    // By code: the filter narrows the table.
    await chip('event_unplanned').click();
    await expect.poll(() => attrs(rows, 'data-event-id')).toEqual([login.eventId, signup.eventId]);
    expect(await chip('event_unplanned').getAttribute('aria-pressed')).toBe('true');

    // The plan relaxed in the editor: unplanned events allowed, and an amount of 0 is fine.
    const editor = byTestId('plan-text');
    await expect.poll(() => editor.isEnabled()).toBe(true);
    await editor.fill(
      JSON.stringify({ mode: 'block', unplannedEvents: 'allow', events: { purchase: purchaseSchema(0) } }),
    );
    await byTestId('plan-save').click();
    await expect.poll(() => byTestId('plan-version').getAttribute('data-value')).toBe('2');

    // The ticked row only: the dry run counts it, Cancel changes nothing.
    const preview = byTestId('replay-preview');
    await row(signup).getByTestId('quarantine-select').check();
    expect(await byTestId('quarantine-replay').textContent()).toContain('1 selected');
    await byTestId('quarantine-replay').click();
    await preview.waitFor();
    expect([
      await preview.getByTestId('replay-accepted').textContent(),
      await preview.getByTestId('replay-rejected').textContent(),
      await preview.getByTestId('replay-duplicated').textContent(),
    ]).toEqual(['1', '0', '0']);
    await byTestId('replay-cancel').click();
    await preview.waitFor({ state: 'hidden' });
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine`)).body.items).toHaveLength(4);

    // Everything: the dry run first (it changes nothing), then the replay on confirmation.
    await byTestId('quarantine-code-all').click();
    await expect.poll(() => rows.count()).toBe(4);
    expect(await row(signup).getByTestId('quarantine-select').isChecked()).toBe(false);
    expect(await byTestId('quarantine-replay').textContent()).toBe('Replay all…');
    await byTestId('quarantine-replay').click();
    await preview.waitFor();
    expect(await preview.getByTestId('replay-accepted').getAttribute('data-value')).toBe('3');
    expect(await preview.getByTestId('replay-rejected').getAttribute('data-value')).toBe('1');
    expect(await preview.getByTestId('replay-duplicated').getAttribute('data-value')).toBe('0');
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine`)).body.items).toHaveLength(4);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body.eventsStored).toBe(1);
    await byTestId('replay-confirm').click();
    await expect
      .poll(() => byTestId('replay-result').textContent())
      .toBe('Replayed 4: 3 accepted and stored, 1 still rejected, 0 duplicated.');
    await expect.poll(() => attrs(rows, 'data-event-id')).toEqual([broken.eventId]);
    expect(await preview.isVisible()).toBe(false);
    // Usage is refreshed at once, not only by the 3 s loop: the replay asked for it.
    await expect.poll(() => byTestId('usage-billed').getAttribute('data-value'), { timeout: 2_000 }).toBe('4');
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/usage`)).body).toMatchObject({
      eventsStored: 4,
      eventsBilled: 4,
    });
    const storedIds = (
      await db.sql<{ event_id: string }[]>`SELECT event_id FROM events WHERE project_id = ${own.projectId}`
    ).map((r) => r.event_id);
    expect(storedIds).toEqual(expect.arrayContaining([cheap.eventId, signup.eventId, login.eventId]));
    expect(storedIds).not.toContain(broken.eventId);

    // What is left is deleted after a confirmation.
    await byTestId('quarantine-delete').click();
    await byTestId('quarantine-delete-confirm').click();
    await expect.poll(() => byTestId('quarantine-empty').isVisible()).toBe(true);
    expect(await rows.count()).toBe(0);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine`)).body).toEqual({
      items: [],
      next: null,
    });
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine/summary`)).body).toEqual([]);
    expect(pageProblems).toEqual([]);
  });

  it('quarantine: its counts and list follow new rejects without a click; every time on the page is UTC, labelled', async () => {
    const own = await provision(srv.url);
    const plan = { mode: 'block', unplannedEvents: 'block', events: { purchase: purchaseSchema(1) } };
    expect((await admin(srv.url, 'PUT', `/admin/projects/${own.projectId}/tracking-plan`, plan)).status).toBe(200);
    const first = serverEvent({ eventName: 'signup' });
    expect((await postBotApi(srv.url, own.token, { events: [first] })).status).toBeLessThan(500);
    await openProject(own.projectId);
    const count = () =>
      page.locator(
        '[data-testid="quarantine-code"][data-code="event_unplanned"] [data-testid="quarantine-code-count"]',
      );
    await expect.poll(() => count().textContent()).toBe('1');
    // Rejected while the page is open: the live totals show it, and the quarantine follows with no Refresh.
    const second = serverEvent({ eventName: 'login' });
    expect((await postBotApi(srv.url, own.token, { events: [second] })).status).toBeLessThan(500);
    await expect.poll(() => count().textContent(), { timeout: 10_000 }).toBe('2');
    await expect
      .poll(() => attrs(byTestId('quarantine-row'), 'data-event-id'))
      .toEqual([second.eventId, first.eventId]);
    // While a row is ticked the list stays as it is (rows never move under a selection); the counts still follow.
    const firstRow = page.locator(`[data-testid="quarantine-row"][data-event-id="${first.eventId}"]`);
    await firstRow.getByTestId('quarantine-select').check();
    const third = serverEvent({ eventName: 'logout' });
    expect((await postBotApi(srv.url, own.token, { events: [third] })).status).toBeLessThan(500);
    await expect.poll(() => count().textContent(), { timeout: 10_000 }).toBe('3');
    expect(await attrs(byTestId('quarantine-row'), 'data-event-id')).toEqual([second.eventId, first.eventId]);
    expect(await firstRow.getByTestId('quarantine-select').isChecked()).toBe(true);

    // Times: in UTC, said so, whatever the browser's zone (Tokyo here); each as the service stored it.
    const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
    const items = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine`)).body.items;
    const received = await page
      .locator('[data-testid="quarantine-row"] time')
      .evaluateAll((ts) => ts.map((t) => [t.getAttribute('datetime'), t.textContent]));
    // The rows shown (the newest stays out of the list while a row is ticked).
    expect(received).toEqual(
      items.slice(1).map((i: { receivedAt: string }) => [i.receivedAt, utc(new Date(i.receivedAt).toISOString())]),
    );
    await expect.poll(() => page.locator('#live-updated').textContent()).toMatch(/^Updated \d\d:\d\d:\d\d UTC$/);
    const stats = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/stats`)).body;
    expect(await page.locator('#live-since').textContent()).toBe(
      `Totals since this instance started, ${utc(new Date(stats.since).toISOString())}.`,
    );
    expect(pageProblems).toEqual([]);
  });

  it('quarantine: pages with "Load more", newest first, and shows an event cut to 64 KiB as text with a badge', async () => {
    const own = await provision(srv.url);
    expect(
      (
        await admin(srv.url, 'PUT', `/admin/projects/${own.projectId}/tracking-plan`, {
          mode: 'block',
          unplannedEvents: 'block',
          events: {},
        })
      ).status,
    ).toBe(200);
    const long = serverEvent({ platformUserId: 'x', propsString: { pad: 'y'.repeat(100_000) } });
    expect((await postBotApi(srv.url, own.token, { events: [long] })).status).toBe(400);
    const many = Array.from({ length: 60 }, (_, i) => serverEvent({ eventName: `unplanned_${i}` }));
    expect((await postBotApi(srv.url, own.token, { events: many })).status).toBe(400);
    const all = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/quarantine?limit=1000`)).body.items.map(
      (i: { eventId: string }) => i.eventId,
    );
    expect(all).toHaveLength(61);

    await openProject(own.projectId);
    const rows = byTestId('quarantine-row');
    await expect.poll(() => rows.count()).toBe(50);
    expect(await attrs(rows, 'data-event-id')).toEqual(all.slice(0, 50));
    await byTestId('quarantine-more').click();
    await expect.poll(() => rows.count()).toBe(61);
    expect(await attrs(rows, 'data-event-id')).toEqual(all);
    expect(await byTestId('quarantine-more').isVisible()).toBe(false);

    const cut = page.locator(`[data-testid="quarantine-row"][data-event-id="${long.eventId}"]`);
    expect(await cut.getByTestId('quarantine-name').textContent()).toBe('truncated');
    await cut.getByTestId('quarantine-view').click();
    const detail = byTestId('quarantine-detail');
    await detail.waitFor();
    expect(await detail.getByTestId('quarantine-truncated').isVisible()).toBe(true);
    const text = (await detail.getByTestId('quarantine-event').textContent()) ?? '';
    expect(text.startsWith(`{"eventId":"${long.eventId}"`)).toBe(true);
    expect(text).toHaveLength(64 * 1024);
    expect(await attrs(detail.getByTestId('quarantine-diagnostic'), 'data-code')).toEqual(['platform_user_id_invalid']);
    await detail.getByTestId('quarantine-detail-close').click();
    await detail.waitFor({ state: 'hidden' });
    expect(pageProblems).toEqual([]);
  });

  it('watches events live over a WebSocket: statuses, a filter, pause and resume, sampling; the socket closes with the view', async () => {
    const own = await provision(srv.url);
    const other = await provision(srv.url);
    const sockets: string[] = [];
    const onSocket = (ws: { url(): string }) => sockets.push(ws.url());
    page.on('websocket', onSocket);
    try {
      await openProject(own.projectId);
      const toggle = byTestId('watch-toggle');
      const status = byTestId('watch-status');
      const rows = byTestId('watch-row');
      await toggle.check();
      await expect.poll(() => status.textContent()).toContain('Watching');
      // The token went in a message, not in the address.
      expect(sockets).toEqual([`${srv.url.replace('http', 'ws')}/admin/live?projectId=${own.projectId}`]);
      expect(await liveViewers()).toBe(1);

      const tapped = serverEvent({ eventName: 'tapped', eventType: 'interaction' });
      const bad = serverEvent({ eventName: 'broken', platformUserId: undefined });
      await postBotApi(srv.url, own.token, { events: [tapped, tapped, bad] });
      // Another project's events are not shown.
      await postBotApi(srv.url, other.token, { events: [serverEvent({ eventName: 'elsewhere' })] });
      await expect.poll(() => rows.count()).toBe(3);
      // Newest on top.
      expect(await attrs(rows, 'data-status')).toEqual(['rejected', 'duplicated', 'accepted']);
      expect(await attrs(rows, 'data-event-id')).toEqual([bad.eventId, tapped.eventId, tapped.eventId]);
      expect(await rows.first().getByTestId('watch-codes').textContent()).toBe('event_missing_identity');
      expect(await rows.last().textContent()).toContain('interaction');

      // The filter: by event name, then by diagnostic code.
      const visible = page.locator('[data-testid="watch-row"]:visible');
      await byTestId('watch-filter').fill('TAPP');
      await expect.poll(() => visible.count()).toBe(2);
      await byTestId('watch-filter').fill('event_missing');
      await expect.poll(() => attrs(visible, 'data-event-id')).toEqual([bad.eventId]);
      expect(await byTestId('watch-shown').textContent()).toBe('1 of 3 match the filter.');
      await byTestId('watch-filter').fill('');
      await expect.poll(() => visible.count()).toBe(3);

      // Paused: new events are counted, not added; Resume adds the ones held back.
      await byTestId('watch-pause').click();
      const held = [serverEvent({ eventName: 'while_paused' }), serverEvent({ eventName: 'while_paused' })];
      await postBotApi(srv.url, own.token, { events: held });
      await expect.poll(() => byTestId('watch-paused').getAttribute('data-value')).toBe('2');
      expect(await byTestId('watch-paused').textContent()).toContain('2 new events held back');
      expect(await rows.count()).toBe(3);
      await byTestId('watch-pause').click();
      await expect.poll(() => rows.count()).toBe(5);
      expect(await attrs(rows, 'data-event-id').then((ids) => ids.slice(0, 2))).toEqual([
        held[1]!.eventId,
        held[0]!.eventId,
      ]);
      expect(await byTestId('watch-paused').isVisible()).toBe(false);

      // Sampling: at most 50 a second reach the page; the next message says how many were skipped.
      await page.waitForTimeout(1100);
      await postBotApi(srv.url, own.token, {
        events: Array.from({ length: 120 }, () => serverEvent({ eventName: 'burst' })),
      });
      await page.waitForTimeout(1100);
      await postBotApi(srv.url, own.token, { events: [serverEvent({ eventName: 'after_burst' })] });
      await expect.poll(() => rows.first().getByTestId('watch-name').textContent()).toBe('after_burst');
      const shown = Number(await byTestId('watch-shown').getAttribute('data-total'));
      const skipped = Number(await byTestId('watch-skipped').getAttribute('data-value'));
      expect(skipped).toBeGreaterThanOrEqual(70);
      expect(shown + skipped).toBe(3 + 2 + 120 + 1);
      expect(await byTestId('watch-skipped').textContent()).toContain(String(skipped));

      // At phone width the table stays inside the page.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(
        await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'),
      ).toBe(true);
      await page.setViewportSize({ width: 1280, height: 900 });

      // Switched off: the socket closes, the table stays; on again: a new socket.
      await toggle.uncheck();
      await expect.poll(liveViewers).toBe(0);
      expect(await rows.count()).toBe(shown);
      await toggle.check();
      await expect.poll(() => status.textContent()).toContain('Watching');
      await expect.poll(liveViewers).toBe(1);
      expect(sockets).toHaveLength(2);

      // Another project: the socket closes and nothing of this one stays.
      await page
        .locator(`[data-testid="project-row"][data-project-id="${other.projectId}"] [data-testid="project-select"]`)
        .click();
      await expect.poll(() => byTestId('project-id').textContent()).toBe(`project ${other.projectId}`);
      await expect.poll(liveViewers).toBe(0);
      expect(await toggle.isChecked()).toBe(false);
      expect(await rows.count()).toBe(0);

      // Signing out closes it too.
      await toggle.check();
      await expect.poll(liveViewers).toBe(1);
      await byTestId('sign-out').click();
      await expect.poll(liveViewers).toBe(0);

      // A token the service no longer takes: the stream is refused (4001) and the page signs out, as on a 401.
      await openProject(own.projectId);
      await page.evaluate("sessionStorage.setItem('tg-ingest.adminToken', 'not-the-admin-token')");
      // A click, not check(): the refusal can switch the toggle back off before check() looks at it.
      await toggle.click();
      await expect.poll(() => byTestId('login-error').textContent()).toContain('no longer accepted');
      expect(await liveViewers()).toBe(0);
    } finally {
      page.off('websocket', onSocket);
    }
    expect(pageProblems).toEqual([]);
  }, 60_000);

  it('reports: charts, totals and campaigns match the API, a range can be chosen, CSV downloads, sections are linkable', async () => {
    const own = await provision(srv.url);
    const day = (back: number) => new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10);
    // An empty project says what to send, rather than showing empty grids.
    await openProject(own.projectId);
    await expect.poll(() => byTestId('reports-status').textContent()).toContain(`to ${day(0)}`);
    expect(await byTestId('reports-empty').isVisible()).toBe(true);
    expect(await byTestId('reports-empty').textContent()).toContain('POST /tg');
    const at = (back: number, hh = '10') => `${day(back)}T${hh}:00:00Z`;
    const start = (user: string, back: number, param: string) =>
      serverEvent({
        platformUserId: user,
        eventDate: at(back),
        eventOrigin: 'platform',
        eventName: 'command',
        propsString: { 'tg.command': 'start', 'tg.start_param': param },
      });
    const pay = (user: string, back: number, name: string, amount: number) =>
      serverEvent({
        platformUserId: user,
        eventDate: at(back, '12'),
        eventOrigin: 'platform',
        eventType: 'payment',
        eventName: name,
        propsString: { 'tg.currency': 'XTR', 'tg.telegram_payment_charge_id': 'ch-1' },
        propsLong: { 'tg.total_amount': amount },
      });
    const events = [
      start('2001', 5, 'spring'),
      serverEvent({ platformUserId: '2001', eventDate: at(4), eventType: 'interaction' }),
      start('2002', 3, 'autumn'),
      serverEvent({ platformUserId: '2003', eventDate: at(2) }),
      pay('2001', 2, 'successful_payment', 250),
      pay('2001', 1, 'refunded_payment', 100),
    ];
    expect((await postBotApi(srv.url, own.token, { events })).status).toBe(202);
    // A mini-app session of 90 s, two days back.
    const session = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const launch = (eventName: string, eventDate: string) => ({
      eventId: crypto.randomUUID(),
      eventName,
      eventType: 'platform',
      eventDate,
      propsString: { session_id: session, platform: 'android' },
    });
    const initData = makeInitData(signer, { messengerBotId: own.messengerBotId, user: { id: 2004 } });
    const webapp = await call(`${srv.url}/tg/webapp`, {
      method: 'POST',
      body: {
        botId: own.botId,
        auth: { initData },
        events: [launch('app_open', at(2, '09')), launch('app_close', `${day(2)}T09:01:30Z`)],
      },
    });
    expect(webapp.status).toBe(202);
    const q = `from=${day(29)}&to=${day(0)}`;
    const report = async (r: string) =>
      (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/reports/${r}`)).body;
    await expect
      .poll(async () => (await report(`daily?${q}`)).reduce((n: number, d: { events: number }) => n + d.events, 0), {
        timeout: 10_000,
      })
      .toBe(events.length + 2);
    await expect
      .poll(async () =>
        (await report(`sessions?${q}`)).reduce((n: number, d: { sessions: number }) => n + d.sessions, 0),
      )
      .toBe(1);
    const daily = await report(`daily?${q}`);
    const campaigns = await report(`campaigns?${q}`);

    await openProject(own.projectId);
    await expect.poll(() => byTestId('reports-status').textContent()).toContain(`${day(29)} to ${day(0)}`);
    await expect.poll(() => byTestId('reports-empty').isVisible()).toBe(false);
    // Legends show the range's last day until a point is hovered, never placeholders.
    const legend = await page.locator('[data-testid="report-events"] .u-legend .u-value').allTextContents();
    expect(legend[0]).toBe(day(0));
    expect(legend.every((v) => v !== '' && v !== '--')).toBe(true);
    const users = await page.locator('[data-testid="report-users"] .u-legend .u-value').allTextContents();
    expect(users).toEqual([day(0), String(daily.at(-1).activeUsers), String(daily.at(-1).newUsers)]);
    const sum = (k: 'events' | 'newUsers') => daily.reduce((n: number, d: Record<string, number>) => n + d[k]!, 0);
    expect(await byTestId('report-events-total').getAttribute('data-value')).toBe(String(sum('events')));
    expect(await byTestId('report-users-total').getAttribute('data-value')).toBe(String(sum('newUsers')));
    expect(await page.locator('[data-testid="report-events"] canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="report-users"] canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="report-revenue"] canvas').count()).toBeGreaterThan(0);
    expect(await byTestId('report-sessions-total').getAttribute('data-value')).toBe('1');
    expect(await page.locator('[data-testid="report-sessions"] canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="report-session-lengths"] canvas').count()).toBeGreaterThan(0);
    expect(await byTestId('report-revenue-net').textContent()).toMatch(/^XTR net (150 XTR|⭐ 150)$/);
    // Retention by week: a row per cohort, each cell its share of the cohort, shaded by it.
    const weeks = await report(`retention?${q}&by=week`);
    expect(await attrs(byTestId('retention-row'), 'data-cohort')).toEqual(
      weeks.map((r: { cohort: string }) => r.cohort),
    );
    const shares = weeks.flatMap((r: { users: number; retained: number[] }) =>
      r.retained.map((n) => (r.users > 0 ? `${Math.round((n / r.users) * 100)}%` : '')),
    );
    expect(await byTestId('retention-cell').allTextContents()).toEqual(shares);
    const shade = (i: number) =>
      byTestId('retention-cell')
        .nth(i)
        .evaluate((c) => c.ownerDocument.defaultView!.getComputedStyle(c).backgroundColor);
    const full = shares.indexOf('100%');
    const none = shares.indexOf('0%');
    expect(full).toBeGreaterThanOrEqual(0);
    expect(await shade(full)).toMatch(/^rgba?\(31, 111, 235(, 0\.8\d*)?\)$/);
    if (none >= 0) expect(await shade(none)).toMatch(/^rgba\(31, 111, 235, 0\)$/);
    await byTestId('retention-by').selectOption('day');
    const days = await report(`retention?${q}&by=day`);
    await expect.poll(() => byTestId('retention-row').count()).toBe(days.length);
    expect(await attrs(byTestId('campaign-row'), 'data-campaign')).toEqual(
      campaigns.map((c: { campaign: string | null }) => c.campaign ?? ''),
    );
    const cells = await byTestId('campaign-new').allTextContents();
    expect(cells).toEqual(campaigns.map((c: { newUsers: number }) => String(c.newUsers)));
    expect(await byTestId('campaign-payers').allTextContents()).toEqual(
      campaigns.map((c: { payers: number }) => String(c.payers)),
    );

    // The funnel builder: steps typed in (one with a filter), asked over the range shown, drawn as one bar a step.
    await byTestId('funnel-step-name').nth(0).fill('command');
    await byTestId('funnel-step-name').nth(1).fill('message_received');
    await byTestId('funnel-step-name').nth(2).fill('successful_payment');
    await byTestId('funnel-step-filter').nth(2).fill('tg.currency = XTR');
    await byTestId('funnel-window').selectOption('604800');
    await byTestId('funnel-run').click();
    const funnel = (
      await admin(srv.url, 'POST', `/admin/projects/${own.projectId}/reports/funnel`, {
        steps: [
          { eventName: 'command' },
          { eventName: 'message_received' },
          { eventName: 'successful_payment', where: { property: 'tg.currency', op: '=', value: 'XTR' } },
        ],
        from: day(29),
        to: day(0),
        windowS: 604800,
      })
    ).body;
    expect(funnel.steps.map((s: { users: number }) => s.users)).toEqual([2, 1, 1]);
    await expect.poll(() => attrs(byTestId('funnel-bar'), 'data-users')).toEqual(['2', '1', '1']);
    const widths = await page
      .locator('[data-testid="funnel-bar"] .fill')
      .evaluateAll((fills) => fills.map((f) => Math.round((f.clientWidth / f.parentElement!.clientWidth) * 100)));
    expect(widths).toEqual([100, 50, 50]);
    await byTestId('funnel-step-filter').nth(1).fill('amount >');
    await byTestId('funnel-run').click();
    await expect.poll(() => byTestId('funnel-status').textContent()).toContain('is not a filter');

    // A range whose first and last days have events: every bar whole (none cut in half at the plot's edges), and the
    // charts as wide as their section (no empty strip on the right). Read from the pixels drawn.
    await byTestId('report-days').selectOption('0');
    await byTestId('report-from').fill(day(5));
    await byTestId('report-to').fill(day(1));
    await byTestId('report-apply').click();
    await expect.poll(() => byTestId('reports-status').textContent()).toContain(`${day(5)} to ${day(1)}`);
    const drawn = await page.evaluate(`(() => {
      const chart = document.querySelector('[data-testid="report-events"] .uplot');
      const canvas = chart.querySelector('canvas');
      const over = chart.querySelector('.u-over');
      const k = canvas.width / canvas.clientWidth;
      const y = Math.round((over.offsetTop + over.offsetHeight - 2) * k);
      const row = canvas.getContext('2d').getImageData(0, y, canvas.width, 1).data;
      const ticks = canvas.getContext('2d').getImageData(0, Math.round((over.offsetTop + over.offsetHeight + 4) * k), canvas.width, 1).data;
      const runs = [];
      const centres = [];
      const marks = [];
      let start = -1;
      for (let x = 0; x <= canvas.width; x++) {
        const i = x * 4;
        const coloured = x < canvas.width && row[i + 3] > 0 &&
          Math.max(row[i], row[i + 1], row[i + 2]) - Math.min(row[i], row[i + 1], row[i + 2]) > 80;
        if (coloured && start < 0) start = x;
        if (!coloured && start >= 0) { runs.push((x - start) / k); centres.push((x + start) / 2 / k); start = -1; }
        if (x < canvas.width && ticks[i + 3] > 0) marks.push(x / k);
      }
      return { runs, centres, marks, chart: chart.clientWidth, section: document.getElementById('reports').clientWidth };
    })()`);
    const { runs, centres, marks, chart, section } = drawn as Record<string, number[]> & Record<string, number>;
    expect(runs).toHaveLength(5);
    expect(Math.max(...runs) - Math.min(...runs)).toBeLessThanOrEqual(2);
    expect(chart).toBe(section);
    // Each day's tick under its bar: days are UTC days, in Tokyo too.
    expect(centres.map((c) => marks.some((m) => Math.abs(m - c) <= 1.5))).toEqual(centres.map(() => true));

    // A shorter range: fewer days, the same kind of numbers. A range chosen before it whose answer
    // arrives after (90 days, held here) is not drawn over it.
    const slow = await holdFirstAnswer(/\/reports\/daily\?/);
    await byTestId('report-days').selectOption('90');
    await slow.answered;
    await byTestId('report-days').selectOption('7');
    await expect.poll(() => byTestId('reports-status').textContent()).toContain(`${day(6)} to ${day(0)}`);
    slow.release();
    await slow.settled();
    expect(await byTestId('reports-status').textContent()).toContain(`${day(6)} to ${day(0)}`);
    await slow.unroute();
    const week = await report(`daily?from=${day(6)}&to=${day(0)}`);
    expect(await byTestId('report-events-total').getAttribute('data-value')).toBe(
      String(week.reduce((n: number, d: { events: number }) => n + d.events, 0)),
    );

    // The CSV of what is shown, as the API makes it.
    const [download] = await Promise.all([page.waitForEvent('download'), byTestId('report-csv-daily').click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    const api = await fetch(
      `${srv.url}/admin/projects/${own.projectId}/reports/daily?from=${day(6)}&to=${day(0)}&format=csv`,
      {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      },
    );
    expect(csv).toBe(await api.text());
    expect(download.suggestedFilename()).toBe(`daily-${day(6)}-${day(0)}.csv`);

    // DOCS_SCREENSHOT=1: the picture in docs/admin-api.md.
    if (process.env.DOCS_SCREENSHOT) {
      mkdirSync('docs/images', { recursive: true });
      await page.setViewportSize({ width: 1280, height: 900 });
      // The section bar stays on top while scrolling: out of the picture, back afterwards.
      await page.evaluate(`document.querySelector('.section-nav').style.visibility = 'hidden'`);
      await page.waitForTimeout(300);
      await byTestId('reports').screenshot({ path: 'docs/images/reports.png' });
      await page.evaluate(`document.querySelector('.section-nav').style.visibility = ''`);
    }
    // Sections are a link away.
    await page.locator('[data-testid="section-nav"] a[data-section="quarantine"]').click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#project=${own.projectId}&section=quarantine`);
    expect(pageProblems).toEqual([]);
  }, 60_000);

  it('privacy: erases pasted ids after a confirmation that counts them, shows progress, lifts a suppression, exports a user', async () => {
    const own = await provision(srv.url);
    const events = ['7001', '7002', '7003'].map((u) => serverEvent({ platformUserId: u }));
    expect((await postBotApi(srv.url, own.token, { events })).status).toBe(202);
    await openProject(own.projectId);
    await page.locator('[data-testid="section-nav"] a[data-section="privacy"]').click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#project=${own.projectId}&section=privacy`);
    await expect.poll(() => byTestId('erasures-empty').isVisible()).toBe(true);
    expect(await byTestId('erasure-request').isDisabled()).toBe(true);

    // Two ids, one repeated, in the ways people paste them.
    await byTestId('erasure-ids').fill('7001, 7002\n7001');
    await byTestId('erasure-suppress').check();
    await byTestId('erasure-request').click();
    expect(await page.locator('#erasure-slot .question').textContent()).toBe(
      'Erase everything stored about 2 users and keep them out? This cannot be undone.',
    );
    await byTestId('erasure-request-confirm').click();
    await expect.poll(() => byTestId('erasure-status').first().textContent(), { timeout: 30_000 }).toBe('done');
    expect(await byTestId('erasure-events').first().textContent()).toBe('2');
    const api = (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/erasures`)).body.items;
    expect(api).toMatchObject([{ userCount: 2, suppress: true, status: 'done', deleted: { events: 2 } }]);
    expect(await attrs(byTestId('suppression'), 'data-user')).toEqual(['7001', '7002']);

    // Lift one: the API no longer lists it.
    await page.locator('[data-testid="suppression"][data-user="7001"] [data-testid="suppression-lift"]').click();
    await page
      .locator('[data-testid="suppression"][data-user="7001"] [data-testid="suppression-lift-confirm"]')
      .click();
    await expect.poll(() => attrs(byTestId('suppression'), 'data-user')).toEqual(['7002']);
    expect((await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/suppressions`)).body.items).toMatchObject([
      { userId: '7002' },
    ]);

    // The export of a user still held, as the API makes it.
    await byTestId('export-user').fill('7003');
    const [download] = await Promise.all([page.waitForEvent('download'), byTestId('export-submit').click()]);
    const lines = readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // The report tables' lines (campaign, active_day) come once the reports have folded the event in.
    const types = lines
      .map((l: { type: string }) => l.type)
      .filter((t: string) => t !== 'campaign' && t !== 'active_day');
    expect(types).toEqual(['profile', 'event', 'end']);
    expect(lines.find((l: { type: string }) => l.type === 'event').data.event_id).toBe(events[2]!.eventId);
    expect(download.suggestedFilename()).toBe('user-7003.ndjson');
    expect(pageProblems).toEqual([]);
  }, 60_000);
});
