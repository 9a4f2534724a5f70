// Two origins for the mini-app SDK's browser tests. The messenger's web client: a page that hosts the mini-app in an
// iframe, opens it with the launch parameters in the fragment and posts the messenger's events to it, as the web
// clients do. The mini-app: a page on an origin of its own that loads one of the two client libraries (the
// messenger's real telegram-web-app.js, shipped in @twa-dev/sdk, or @telegram-apps/sdk) and then the SDK's script
// from the service, with nothing else.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The repository's node_modules, from the source (tests) or from dist/ (benchmarks). */
function modules(): string {
  for (const up of ['../../node_modules/', '../../../node_modules/']) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(`${dir}@twa-dev/sdk`)) return dir;
  }
  throw new Error('@twa-dev/sdk is not installed (npm ci)');
}

// Files the packages do not export: read from node_modules as a page would be served them.
const LIBRARIES: Record<string, () => string> = {
  '/telegram-web-app.js': () => `${modules()}@twa-dev/sdk/dist/telegram-web-apps.js`,
  '/telegram-apps-sdk.js': () => `${modules()}@telegram-apps/sdk/dist/index.iife.js`,
};

/** The web client: `messenger.open(url)`, `messenger.post(type, data)`, `messenger.remove()`, and what the app sent. */
const MESSENGER = `<!doctype html>
<html><head><meta charset="utf-8"><title>messenger</title></head><body>
<script>
let frame = null;
const outgoing = [];
window.addEventListener('message', (e) => {
  if (frame === null || e.source !== frame.contentWindow) return;
  try { outgoing.push(JSON.parse(e.data)); } catch { outgoing.push({ raw: String(e.data) }); }
});
window.messenger = {
  open(url) {
    frame = document.createElement('iframe');
    frame.src = url;
    frame.style.width = '390px';
    frame.style.height = '640px';
    document.body.appendChild(frame);
  },
  post(eventType, eventData) {
    frame.contentWindow.postMessage(JSON.stringify({ eventType, eventData }), '*');
  },
  remove() { frame.remove(); frame = null; },
  outgoing: () => outgoing,
};
</script></body></html>`;

const escapeHtml = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The mini-app page: the library, then the SDK's one script tag with its data- attributes (none when `attributes` is
 * null: the same page without the SDK, a benchmark's baseline).
 */
function miniApp(library: 'twa' | 'tma', service: string, attributes: Record<string, string> | null): string {
  const data = Object.entries(attributes ?? {})
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  const sdk = attributes === null ? '' : `<script src="${escapeHtml(service)}/sdk/webapp.js"${data} async></script>`;
  // @telegram-apps/sdk posts to the messenger's web origin unless told the host's, as its docs say for another host.
  const setup =
    library === 'twa'
      ? '<script src="/telegram-web-app.js"></script>'
      : `<script src="/telegram-apps-sdk.js"></script>
<script>
telegramApps.sdk.targetOrigin.set(location.ancestorOrigins[0]);
telegramApps.sdk.init();
</script>`;
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>mini-app</title>
${setup}
${sdk}
</head><body>mini-app</body></html>`;
}

export interface MiniAppPages {
  /** The messenger's origin, serving its page at `/`. */
  messengerUrl: string;
  /** The mini-app page's URL for a library, with the SDK's data- attributes (without the fragment). */
  appUrl(library: 'twa' | 'tma', attributes: Record<string, string> | null): string;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function startMiniAppPages(serviceUrl: string): Promise<MiniAppPages> {
  const messenger = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(MESSENGER);
  });
  const app = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const library = LIBRARIES[url.pathname];
    if (library !== undefined) {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      return res.end(readFileSync(library()));
    }
    if (url.pathname === '/fail.js') {
      // A script of the app's own that fails: an uncaught error, an unhandled rejection.
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      return res.end(
        [
          "setTimeout(() => { throw new Error('boom in a handler'); });",
          "Promise.reject(new TypeError('nope'));",
          // An error that names the page's address (its fragment holds initData) and initData itself.
          "setTimeout(() => { throw new Error('failed at ' + location.href + ' with ' + (window.Telegram?.WebApp?.initData ?? '')); });",
          '',
        ].join('\n'),
      );
    }
    const m = /^\/(twa|tma)\.html$/.exec(url.pathname);
    if (m === null) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(miniApp(m[1] as 'twa' | 'tma', serviceUrl, JSON.parse(url.searchParams.get('data') ?? 'null')));
  });
  const messengerUrl = await listen(messenger);
  const appOrigin = await listen(app);
  return {
    messengerUrl,
    appUrl: (library, attributes) =>
      `${appOrigin}/${library}.html?data=${encodeURIComponent(JSON.stringify(attributes))}`,
    close: async () => {
      for (const s of [messenger, app]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

/** The fragment the messenger opens a mini-app with. */
export function launchFragment(initData: string, platform: string, bgColor: string): string {
  const theme = JSON.stringify({ bg_color: bgColor, text_color: '#f5f5f5', button_color: '#5288c1' });
  return `#tgWebAppData=${encodeURIComponent(initData)}&tgWebAppVersion=8.0&tgWebAppPlatform=${platform}&tgWebAppThemeParams=${encodeURIComponent(theme)}`;
}
