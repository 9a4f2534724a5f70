// A static web server for the browser tests of the client: a test page and the built ESM files of
// client/dist, on an origin of its own (another port than the service's), as a mini-app is served.
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const DIST = fileURLToPath(new URL('../../client/dist/', import.meta.url));

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>mini-app</title>
<script type="module" src="/harness.js"></script></head>
<body>mini-app</body></html>`;

/**
 * The page's side of the test, on window.harness. `hold()` lets later requests reach the service but
 * keeps their answers from the client: a batch committed yet still in flight when the page closes.
 */
const HARNESS = `import { createClient } from '/client/index.js';
let client = null;
let hold = false;
const withheld = [];
const problems = [];
const realFetch = globalThis.fetch.bind(globalThis);
function fetchImpl(input, init) {
  if (!hold) return realFetch(input, init);
  return realFetch(input, init).then((res) => {
    withheld.push(res.status);
    return new Promise(() => {});
  });
}
window.harness = {
  start(opts) {
    client = createClient({
      ...opts,
      fetch: fetchImpl,
      onFailed: (events, err) => problems.push('failed ' + events.length + ': ' + err.message),
      onRejected: (events, diags) => problems.push('rejected ' + events.length + ': ' + JSON.stringify(diags)),
    });
    return client.pending;
  },
  track(n, text) {
    const out = [];
    for (let i = 0; i < n; i++) {
      const e = client.track({ eventName: 'tap', eventType: 'interaction', text, propsLong: { i } });
      out.push({ eventId: e.eventId, eventDate: e.eventDate });
    }
    return out;
  },
  hold() { hold = true; },
  withheld: () => withheld,
  pending: () => client.pending,
  problems: () => problems,
  async flush() {
    const r = await client.flush();
    return { accepted: r.accepted, rejected: r.rejected, failed: r.failed };
  },
  stored: (key) => localStorage.getItem(key),
};
`;

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

export async function startClientPageServer(): Promise<StaticServer> {
  if (!existsSync(`${DIST}index.js`)) throw new Error('client/dist/index.js is missing: run make build first');
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (path === '/' || path === '/index.html') return send(200, 'text/html; charset=utf-8', PAGE);
    if (path === '/harness.js') return send(200, 'text/javascript; charset=utf-8', HARNESS);
    const m = /^\/client\/([a-z-]+\.js)$/.exec(path);
    if (m !== null && existsSync(`${DIST}${m[1]}`))
      return send(200, 'text/javascript; charset=utf-8', readFileSync(`${DIST}${m[1]}`));
    return send(404, 'text/plain; charset=utf-8', 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
