// The two ingestion endpoints, each with one name used everywhere: in code, worker task kinds,
// metrics labels, the `channel` column of stored events and the documentation. `webapp` is the
// mini-app endpoint (initData), `bot_api` the bot-backend endpoint (X-API-Key). The paths below are those
// more than one module needs (the metrics' route groups, the root's pointers); every route is declared once, in
// its wing's table (src/wings/*/).

export type Endpoint = 'webapp' | 'bot_api';
export const ENDPOINTS: readonly Endpoint[] = ['webapp', 'bot_api'];

export const PATHS = {
  /** The first path of each endpoint is the one new code uses; the second is a legacy alias. */
  bot_api: ['/tg', '/messenger'],
  webapp: ['/tg/webapp', '/messenger/webapp'],
  /** Points to the admin page, the OpenAPI document and the docs. */
  root: '/',
  health: '/healthz',
  ready: '/readyz',
  metrics: '/metrics',
  openapi: '/openapi.json',
  /** The admin API lives under this prefix; the admin page at `${admin}` and `${admin}/`. */
  admin: '/admin',
  adminLive: '/admin/live',
  /** The mini-app SDK, one script a page includes. */
  webappScript: '/sdk/webapp.js',
} as const;

/** How a request path is counted in metrics. */
export type RouteGroup = Endpoint | 'admin' | 'health' | 'metrics' | 'other';
export const ROUTE_GROUPS: readonly RouteGroup[] = ['bot_api', 'webapp', 'admin', 'health', 'metrics', 'other'];

export function routeGroup(path: string): RouteGroup {
  if ((PATHS.bot_api as readonly string[]).includes(path)) return 'bot_api';
  if ((PATHS.webapp as readonly string[]).includes(path)) return 'webapp';
  if (path === PATHS.admin || path.startsWith(`${PATHS.admin}/`)) return 'admin';
  if (path === PATHS.health || path === PATHS.ready) return 'health';
  if (path === PATHS.metrics) return 'metrics';
  return 'other';
}
