// The mini-app SDK served by the service itself: `<script src="https://<service>/sdk/webapp.js" data-bot-id="…" async>`
// is all a page needs. Public, cacheable, readable from any origin; the same bytes for every request.
import { PATHS } from '../../base/endpoints.js';
import type { Handler } from '../../http/server.js';
import { operation } from '../../openapi/operations.js';
import { acceptsGzip, loadWebappScript, notModified } from '../../sdk/webapp-script.js';
import type { Wing } from '../wing.js';

/** An hour: a deployment's new SDK reaches returning pages within it, and meanwhile the revalidation is a 304. */
export const SCRIPT_MAX_AGE_S = 3600;

export function sdkWing(): Wing {
  const script = loadWebappScript();
  const headers = (etag: string) => ({
    'Cache-Control': `public, max-age=${SCRIPT_MAX_AGE_S}`,
    ETag: etag,
    Vary: 'Accept-Encoding',
    'Access-Control-Allow-Origin': '*',
    'Cross-Origin-Resource-Policy': 'cross-origin',
  });
  const plain = headers(script.plain.etag);
  const gzipped = { ...headers(script.gzip.etag), 'Content-Encoding': 'gzip' };
  const handler: Handler = (req) => {
    const gzip = acceptsGzip(req.headers['accept-encoding']);
    const chosen = gzip ? script.gzip : script.plain;
    const sent = gzip ? gzipped : plain;
    if (notModified(req.headers['if-none-match'], chosen.etag)) return { status: 304, headers: sent };
    return { status: 200, contentType: 'text/javascript; charset=utf-8', headers: sent, body: chosen.bytes };
  };
  return {
    name: 'sdk',
    routes: [
      {
        method: 'get',
        path: PATHS.webappScript,
        handler,
        listener: 'public',
        operation: operation({
          operationId: 'webappScript',
          summary: 'The mini-app SDK (@tg-ingest/webapp) as one script',
          description: [
            'Include it with `<script src="https://<this service>/sdk/webapp.js" data-bot-id="<service bot id>" async></script>`: it captures the mini-app\'s lifecycle, buttons, payments, dialogs and errors and sends them to the webapp endpoint of the origin it was loaded from. Options are `data-` attributes (see integrations/webapp/README.md).',
            `Served from memory, gzipped when the client accepts it, with \`Cache-Control: public, max-age=${SCRIPT_MAX_AGE_S}\`, a strong \`ETag\` (\`If-None-Match\` is answered 304) and \`Access-Control-Allow-Origin: *\`.`,
          ].join('\n\n'),
          tags: ['operations'],
          errors: [],
          success: {
            200: {
              description: 'The script.',
              content: { 'text/javascript': { schema: { type: 'string' } } },
              headers: {
                'Cache-Control': 'required',
                ETag: 'required',
                'Access-Control-Allow-Origin': 'required',
                'Content-Encoding': 'optional',
                Vary: 'required',
              },
            },
            304: {
              description: "Not modified: the client's copy (If-None-Match) is current.",
              headers: {
                'Cache-Control': 'required',
                ETag: 'required',
                'Access-Control-Allow-Origin': 'required',
                Vary: 'required',
              },
            },
          },
        }),
      },
    ],
  };
}
