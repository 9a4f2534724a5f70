// The admin page, its files, and the live view's WebSocket: what a person signed in with the admin token looks at.
import { PAGE_ASSETS, pageReplies } from '../../admin/page-assets.js';
import { PATHS } from '../../base/endpoints.js';
import type { LiveHub } from '../../http/live.js';
import { NOT_FOUND } from '../../http/replies.js';
import type { Route } from '../../http/route.js';
import { operation, type OperationSpec } from '../../openapi/operations.js';
import { ref } from '../../openapi/schemas.js';

const pageOperation = (operationId: string): Record<string, unknown> =>
  operation({
    operationId,
    summary: 'The admin web page',
    description: 'Static, the same at /admin and /admin/; it calls the admin API with the token the user enters.',
    tags: ['operations'],
    errors: [],
    success: { 200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  });

const ASSET_OPERATION: OperationSpec = {
  operationId: 'adminPageAsset',
  summary: "The admin page's static files",
  tags: ['operations'],
  errors: [],
  parameters: [
    { name: 'file', in: 'path', required: true, schema: { type: 'string', enum: Object.keys(PAGE_ASSETS) } },
  ],
  success: {
    200: {
      description: 'The file.',
      content: Object.fromEntries(
        Object.values(PAGE_ASSETS).map((type) => [type.split(';')[0]!, { schema: { type: 'string' } }]),
      ),
    },
  },
};

const LIVE_VIEW = operation({
  operationId: 'liveView',
  summary: "Watch a project's events as they are answered (WebSocket)",
  description: [
    'A WebSocket (RFC 6455): send `GET /admin/live?projectId=<uuid>` with the upgrade headers; the answer is `101 Switching Protocols`, or `400 bad_request` when `projectId` is not a UUID. Without the upgrade headers the path answers 404. The project is not looked up: an unknown one simply has no events. These two answers come from the WebSocket library and carry no X-Request-Id.',
    'The admin token is never put in the URL: the client\'s first message is `{"token": "<ADMIN_TOKEN>"}` (`LiveSignIn`), within 5 s. A wrong or missing token closes the socket with code 4001 (`admin_unauthorized`), or 4029 (`auth_rate_limited`) once the address is past `ADMIN_AUTH_FAILURES_PER_MIN`, the budget it shares with the admin API.',
    'Then the server sends `{"type": "ready", "projectId", "perSecond"}` and one JSON message per event of the project that this instance answers (`LiveMessage`): `{eventId, eventName, eventType, channel, botId, receivedAt, status, diagnostics, event, skipped}`, where `status` is `accepted`, `rejected` or `duplicated`, `event` is the event as sent, and `skipped` counts the events not sent to this viewer since the message before.',
    'Each viewer gets at most `LIVE_MESSAGES_PER_S` messages a second (a burst of as many, then a steady rate); a viewer that does not read fast enough has messages skipped rather than queued. Each instance shows only the events it answers itself: behind a load balancer, watch every instance. Events replayed from the quarantine are not shown. Messages from the client after the token are ignored.',
  ].join('\n\n'),
  tags: ['admin'],
  parameters: [
    {
      name: 'projectId',
      in: 'query',
      required: true,
      description: 'The project to watch, a UUID; anything else: 400.',
      schema: { type: 'string', format: 'uuid' },
    },
    {
      name: 'Upgrade',
      in: 'header',
      required: true,
      description: '`websocket`; without the upgrade headers the path answers 404.',
      schema: { type: 'string' },
    },
    {
      name: 'Sec-WebSocket-Key',
      in: 'header',
      required: true,
      description: 'A random 16-byte value in base64 (RFC 6455).',
      schema: { type: 'string' },
    },
    {
      name: 'Sec-WebSocket-Version',
      in: 'header',
      required: true,
      description: '`13`.',
      schema: { type: 'string', const: '13' },
    },
  ],
  success: {
    101: {
      description: 'Switching Protocols: the WebSocket is open. Send `LiveSignIn` first; then `LiveMessage`s arrive.',
      headers: { Upgrade: 'required', Connection: 'required', 'Sec-WebSocket-Accept': 'required' },
    },
  },
  errors: ['bad_request', 'not_found'],
  errorNotes: {
    400: '`projectId` is not a UUID (no X-Request-Id).',
    404: 'Not an upgrade request (no `Upgrade: websocket` and `Sec-WebSocket-Key`).',
  },
  bareStatuses: [101, 400],
  extensions: {
    'x-websocket': {
      clientMessages: ref('LiveSignIn'),
      serverMessages: ref('LiveMessage'),
      closeCodes: {
        4001: 'admin_unauthorized: no valid token in the first message (or none within 5 s)',
        4029: 'auth_rate_limited: too many wrong tokens from this address',
      },
    },
  },
});

export function pageRoutes(live: LiveHub): Route[] {
  const { index, files } = pageReplies();
  return [
    // The same page on both: the server's status table has no 3xx, and index.html uses absolute asset URLs.
    { method: 'get', path: '/admin/', handler: () => index, operation: pageOperation('adminPage') },
    { method: 'get', path: '/admin', handler: () => index, operation: pageOperation('adminPageNoSlash') },
    {
      method: 'get',
      path: '/admin/page/:file',
      handler: (req) => files.get(req.params[0]!) ?? NOT_FOUND,
      operation: operation(ASSET_OPERATION),
    },
    {
      method: 'get',
      path: PATHS.adminLive,
      attach: (server) => live.mount(server.app, PATHS.adminLive),
      operation: LIVE_VIEW,
    },
  ];
}
