// The mini-app SDK's script as the service serves it (/sdk/webapp.js): one bundled file of @tg-ingest/webapp, built
// by `npm run build`, read once at start with its gzip and its entity tag, so a request costs a lookup.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

/** One representation of the script: its bytes and their strong entity tag. */
export interface Representation {
  bytes: Buffer;
  etag: string;
}

export interface ServedScript {
  /** The file as built. */
  plain: Representation;
  /** Gzipped: bytes of their own, so a tag of their own (a cache never answers one with the other's 304). */
  gzip: Representation;
}

/** Run from source (tests), the package is two folders up; from dist/src/sdk/, three. */
const CANDIDATES = [
  new URL('../../integrations/webapp/dist/webapp.min.js', import.meta.url),
  new URL('../../../integrations/webapp/dist/webapp.min.js', import.meta.url),
];

export function loadWebappScript(): ServedScript {
  const file = CANDIDATES.find((f) => existsSync(f));
  if (file === undefined)
    throw new Error(
      `the mini-app SDK's bundle is missing (looked for ${CANDIDATES.map((f) => f.pathname).join(', ')}); run npm run build`,
    );
  const plain = readFileSync(file);
  const tag = createHash('sha256').update(plain).digest('base64url').slice(0, 27);
  return {
    plain: { bytes: plain, etag: `"${tag}"` },
    gzip: { bytes: gzipSync(plain, { level: 9 }), etag: `"${tag}-gz"` },
  };
}

/** True when an If-None-Match header names this tag (or is `*`): the client's copy is current. */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  // Weak comparison, as RFC 9110 asks for If-None-Match: W/"x" matches "x".
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

/** True when the client takes gzip (Accept-Encoding names it without q=0). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  return acceptEncoding.split(',').some((part) => {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
