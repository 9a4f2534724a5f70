// uWebSockets.js, from the build that loads on Node 20 with Debian 12's glibc
// (@trufflesuite/uws-js-unofficial; the official package is not on npm, and newer community builds
// need a newer glibc). Its own loader silently falls back to a slow Node.js imitation when the
// binary does not load; we load the binary directly so that such a machine fails loudly instead.
import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

const require = createRequire(import.meta.url);
const binary = `@trufflesuite/uws-js-unofficial/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

let uws: typeof UWS;
try {
  uws = require(binary) as typeof UWS;
} catch (err) {
  throw new Error(
    `uWebSockets.js has no binary for ${process.platform}-${process.arch} with Node ABI ${process.versions.modules} (${binary}): ${(err as Error).message}`,
  );
}

export default uws;
export type {
  HttpRequest,
  HttpResponse,
  TemplatedApp,
  us_listen_socket,
  WebSocket,
} from '@trufflesuite/uws-js-unofficial';
