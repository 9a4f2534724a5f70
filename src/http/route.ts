// A route as a wing declares it: method, path, handler and, for every route a client may call, its OpenAPI operation.
// The listeners register from these tables and /openapi.json is assembled from them, so a route is written once.
import type { Handler, HttpServer, Method, RouteOptions } from './server.js';

/** Which listener serves a route: the public one, the admin one (ADMIN_PORT, else the public one), or both. */
export type Listener = 'public' | 'admin' | 'every';

export interface Route {
  method: Method;
  /** uWS's pattern: `:name` for a parameter (`{name}` in the OpenAPI document). */
  path: string;
  /** The answer; absent for a route uWS serves itself (`attach`). */
  handler?: Handler;
  /** Registers a route uWS serves itself, such as a WebSocket. */
  attach?: (server: HttpServer) => void;
  options?: RouteOptions;
  /** The OpenAPI operation object; absent for fallbacks (405, 404) only. */
  operation?: Record<string, unknown>;
  listener?: Listener;
}

/** Registers the routes a listener serves, in the table's order. */
export function register(server: HttpServer, routes: readonly Route[], serves: readonly Listener[]): void {
  for (const r of routes) {
    if (!serves.includes(r.listener ?? 'admin')) continue;
    if (r.attach !== undefined) r.attach(server);
    else server.route(r.method, r.path, r.handler!, r.options);
  }
}

/** The path as OpenAPI writes it. */
export const documentedPath = (r: Route): string => r.path.replace(/:(\w+)/g, '{$1}');

/** The method as HTTP and OpenAPI name it (uWS calls DELETE `del`). */
export const httpMethod = (r: Route): string => (r.method === 'del' ? 'delete' : r.method);
