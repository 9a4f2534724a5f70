// The admin page at /admin/ driven in headless Chromium: every step goes through the UI, and its
// effect is checked over HTTP the way a bot backend would see it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postB, provision, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ADMIN_TOKEN, type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let profile: string;
let browser: BrowserContext;
let page: Page;
/** Uncaught page errors and console errors other than the failed requests the test provokes. */
const pageProblems: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url);
  // A fresh profile, and no background traffic: this machine's closed network refuses it anyway.
  profile = mkdtempSync(join(tmpdir(), 'tg-ingest-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
    // Money is formatted for the browser's locale; the expectations below are written in en-US.
    locale: 'en-US',
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // Chromium logs every non-2xx fetch as "Failed to load resource"; the test provokes some on purpose.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) pageProblems.push(`console: ${msg.text()}`);
  });
});

afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
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

const payment = (amount: number, currency: string) =>
  serverEvent({ eventOrigin: 'platform', eventType: 'payment', eventName: 'successful_payment', propsString: { 'tg.currency': currency }, propsLong: { 'tg.total_amount': amount } });

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
    expect((await byTestId('login-token').getAttribute('aria-describedby'))?.split(' ')).toContain(await hint.getAttribute('id'));
    // The longer form still fits a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
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

    // Allowance: empty means unlimited.
    await byTestId('allowance-input').fill('');
    await byTestId('allowance-save').click();
    await expect.poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${projectId}`)).body.eventAllowance).toBeNull();
    await expect.poll(() => byTestId('usage-allowance').textContent()).toBe('unlimited');

    // A bot linked to the project.
    await byTestId('bot-name').fill('Shop bot');
    await byTestId('bot-create-submit').click();
    const row = byTestId('bot-row');
    await row.waitFor();
    const botId = await row.getAttribute('data-bot-id');
    const bot = (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body;
    expect(bot).toMatchObject({ projectId, name: 'Shop bot', messengerBotId: null, miniAppIngest: true, apiIngest: true });

    // Messenger bot id edited in the row.
    await row.getByTestId('bot-messenger-id-input').fill('7123456789');
    await row.getByTestId('bot-messenger-id-save').click();
    await expect.poll(async () => (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body.messengerBotId).toBe(7123456789);

    // Token dialog: create one and read its value, shown once.
    await row.getByTestId('bot-tokens').click();
    const dialog = byTestId('token-dialog');
    await dialog.waitFor();
    await dialog.getByTestId('token-create').click();
    const valueBox = dialog.getByTestId('token-new-value');
    await expect.poll(() => valueBox.inputValue()).not.toBe('');
    const token = await valueBox.inputValue();
    expect(await dialog.getByTestId('token-warning').isVisible()).toBe(true);
    await dialog.getByTestId('token-copy').click();
    await expect.poll(() => dialog.getByTestId('token-copy-status').textContent()).toMatch(/Copied|Selected/);
    await expect.poll(() => dialog.getByTestId('token-row').count()).toBe(1);

    // The token works, and the live view picks the event up.
    expect(Number(await byTestId('stat-accepted').getAttribute('data-value'))).toBe(0);
    const sent = await postB(srv.url, token, { events: [serverEvent(), serverEvent()] });
    expect(sent.status).toBe(202);
    expect(sent.body.accepted).toBe(2);
    await expect.poll(() => byTestId('stat-accepted').getAttribute('data-value'), { timeout: 10_000, interval: 250 }).toBe('2');
    expect(await byTestId('live-chart').locator('svg rect.s-accepted').count()).toBeGreaterThan(0);

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
    const off = await postB(srv.url, token, { events: [serverEvent()] });
    expect(off.status).toBe(403);
    expect(off.body.error).toBe('api_ingest_disabled');
    await expect.poll(() => apiSwitch.isEnabled()).toBe(true);
    await apiSwitch.click();
    await expect.poll(async () => (await admin(srv.url, 'GET', `/admin/bots/${botId}`)).body.apiIngest).toBe(true);
    expect((await postB(srv.url, token, { events: [serverEvent()] })).status).toBe(202);

    // Revoke through the dialog: the token is refused at once.
    await row.getByTestId('bot-tokens').click();
    await dialog.waitFor();
    const tokenRow = dialog.getByTestId('token-row');
    await tokenRow.getByTestId('token-revoke').click();
    await tokenRow.getByTestId('token-revoke-confirm').click();
    await expect.poll(() => tokenRow.getAttribute('data-revoked')).toBe('true');
    expect(await tokenRow.getByTestId('token-status').textContent()).toContain('revoked');
    const revoked = await postB(srv.url, token, { events: [serverEvent()] });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error).toBe('api_key_invalid');
    await dialog.getByTestId('token-dialog-close').click();

    // Phone width: neither the page nor the token dialog overflows sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(true);
    await row.getByTestId('bot-tokens').click();
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('token-row').count()).toBe(1);
    expect(await dialog.evaluate((d) => d.scrollWidth <= d.clientWidth)).toBe(true);
    const box = await dialog.boundingBox();
    expect(box!.x >= 0 && box!.x + box!.width <= 390).toBe(true);
    await dialog.getByTestId('token-dialog-close').click();
    await page.setViewportSize({ width: 1280, height: 900 });

    // A reload keeps the session and the selected project; signing out forgets the token.
    await page.reload();
    await expect.poll(() => byTestId('project-title').textContent()).toBe(projectName);
    await byTestId('sign-out').click();
    await byTestId('login-form').waitFor();
    expect(await page.evaluate<string | null>("sessionStorage.getItem('tg-ingest.adminToken')")).toBeNull();
    expect(await byTestId('project-detail').isVisible()).toBe(false);

    expect(pageProblems).toEqual([]);
  });

  // Runs while the project made above is the only one.
  it('opens the only project after sign-in; with several, the one this tab had open, else none', async () => {
    const projects = (await admin(srv.url, 'GET', '/admin/projects')).body as { projectId: string; name: string }[];
    expect(projects).toHaveLength(1);
    const only = projects[0]!;

    const tab = await freshTab();
    await signIn(tab);
    await expect.poll(() => tab.getByTestId('project-title').textContent()).toBe(only.name);
    expect(await tab.getByTestId('project-detail').isVisible()).toBe(true);
    expect(await tab.getByTestId('project-row').getByTestId('project-select').getAttribute('aria-current')).toBe('true');
    await expect.poll(() => tab.getByTestId('usage-month').textContent()).toMatch(/^\d{4}-\d{2}$/);
    await tab.close();

    // A second project: a new tab chooses nothing.
    const second = (await admin(srv.url, 'POST', '/admin/projects', { name: 'Second shop' })).body.projectId as string;
    const tab2 = await freshTab();
    await signIn(tab2);
    await expect.poll(() => tab2.getByTestId('project-row').count()).toBe(2);
    expect(await tab2.getByTestId('project-detail').isVisible()).toBe(false);

    // Signed out and in again, the tab comes back to the project it had open (the address no longer names it).
    await tab2.locator(`[data-testid="project-row"][data-project-id="${second}"]`).getByTestId('project-select').click();
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

      const sent = await postB(srv.url, own.token, { events: [serverEvent(), serverEvent(), serverEvent()] });
      expect(sent.status).toBe(202);
      // Without a click: the 3 s loop has to bring both the live count and the month's usage.
      await expect.poll(() => byTestId('stat-accepted').getAttribute('data-value'), { timeout: 10_000, interval: 250 }).toBe('3');
      await expect.poll(() => byTestId('usage-billed').getAttribute('data-value'), { timeout: 10_000, interval: 250 }).toBe('3');
      await expect.poll(() => byTestId('usage-stored').getAttribute('data-value'), { timeout: 10_000, interval: 250 }).toBe('3');

      // One loop: every round asks for both, so the counts never drift apart.
      const count = (kind: string) => requests.filter((k) => k === kind).length;
      requests.length = 0;
      await page.waitForTimeout(7_000);
      expect(count('stats')).toBeGreaterThanOrEqual(2);
      expect(Math.abs(count('stats') - count('usage'))).toBeLessThanOrEqual(1);

      // Hidden: nothing is asked (a round already in flight may still land).
      await setTabHidden(true);
      await page.waitForTimeout(500);
      requests.length = 0;
      await page.waitForTimeout(4_000);
      expect(requests).toEqual([]);

      // Visible again: a round at once, with revenue, then the loop goes on.
      await setTabHidden(false);
      await expect.poll(() => [count('stats'), count('usage'), count('reports/revenue')], { timeout: 1_000, interval: 50 }).toEqual([1, 1, 1]);
      await expect.poll(() => count('stats'), { timeout: 5_000, interval: 250 }).toBe(2);
    } finally {
      page.off('request', onRequest);
    }
    expect(pageProblems).toEqual([]);
  }, 60_000);

  it("shows revenue in the currency's units, Stars without decimals, big totals to the last digit", async () => {
    const own = await provision(srv.url);
    const big = Number.MAX_SAFE_INTEGER; // two of them sum beyond 2^53: the API answers a string
    const sent = await postB(srv.url, own.token, { events: [payment(1999, 'USD'), payment(1999, 'XTR'), payment(big, 'JPY'), payment(big, 'JPY'), payment(big, 'EUR'), payment(big, 'EUR')] });
    expect(sent.status).toBe(202);
    await expect
      .poll(async () => (await admin(srv.url, 'GET', `/admin/projects/${own.projectId}/reports/revenue`)).body)
      .toContainEqual({ currency: 'JPY', totalAmount: '18014398509481982' });

    await openProject(own.projectId);
    await byTestId('revenue-refresh').click();
    const total = (currency: string) => page.locator(`[data-testid="revenue-row"][data-currency="${currency}"] [data-testid="revenue-total"]`).textContent();
    await expect.poll(() => total('USD')).toBe('$19.99');
    expect(await total('XTR')).toMatch(/^(1,999 XTR|⭐ 1,999)$/);
    expect(await total('JPY')).toBe('¥18,014,398,509,481,982');
    expect(await total('EUR')).toBe('€180,143,985,094,819.82');
    expect(pageProblems).toEqual([]);
  });
});
