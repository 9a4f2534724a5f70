// The admin web page at /admin/: static files, no build step, fed by the admin API.
// The files live in src/admin/page/ (tsc does not copy them into dist) and are read once at start.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Reply } from '../http/server.js';

/** The page's ES modules, by section; admin.js is the entry, the others its imports. */
export const PAGE_MODULES = [
  'admin.js',
  'core.js',
  'api.js',
  'format.js',
  'limits.js',
  'usage.js',
  'signin.js',
  'projects.js',
  'bots.js',
  'tokens.js',
  'confirm.js',
  'plan.js',
  'quarantine.js',
  'counts.js',
  'live.js',
  'reports.js',
  'funnel.js',
  'privacy.js',
] as const;

/** Files of libraries the page loads, served from node_modules under names of the page's own. */
const VENDOR: Record<string, { file: string; type: string }> = {
  'uplot.js': { file: 'uplot/dist/uPlot.esm.js', type: 'text/javascript; charset=utf-8' },
  'uplot.css': { file: 'uplot/dist/uPlot.min.css', type: 'text/css; charset=utf-8' },
};

/** Asset name → Content-Type; served under /admin/page/, which no API route uses. */
export const PAGE_ASSETS: Record<string, string> = {
  ...Object.fromEntries(PAGE_MODULES.map((m) => [m, 'text/javascript; charset=utf-8'])),
  'admin.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
  ...Object.fromEntries(Object.entries(VENDOR).map(([name, v]) => [name, v.type])),
};

// Everything from our own origin, nothing inline: data inserted into the page can never run.
const HEADERS: Record<string, string> = {
  'Cache-Control': 'no-cache',
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/** dist/src/admin/page.js looks back into the source tree; run from source (tests), the folder is next door. */
function pageDir(): URL {
  const candidates = [new URL('./page/', import.meta.url), new URL('../../../src/admin/page/', import.meta.url)];
  const dir = candidates.find((d) => existsSync(new URL('index.html', d)));
  if (dir === undefined)
    throw new Error(`admin page files not found (looked in ${candidates.map((d) => d.pathname).join(', ')})`);
  return dir;
}

/** The page (the same at /admin and /admin/) and its files by name, read once. */
export function pageReplies(): { index: Reply; files: Map<string, Reply> } {
  const dir = pageDir();
  const file = (name: string, contentType: string): Reply => ({
    status: 200,
    contentType,
    headers: HEADERS,
    body: readFileSync(new URL(name, dir), 'utf8'),
  });
  const require = createRequire(import.meta.url);
  const files = new Map<string, Reply>();
  for (const [name, type] of Object.entries(PAGE_ASSETS)) {
    const vendor = VENDOR[name];
    files.set(
      name,
      vendor === undefined
        ? file(name, type)
        : {
            status: 200,
            contentType: type,
            headers: HEADERS,
            body: readFileSync(require.resolve(vendor.file), 'utf8'),
          },
    );
  }
  return { index: file('index.html', 'text/html; charset=utf-8'), files };
}
