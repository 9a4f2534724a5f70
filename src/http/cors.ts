// CORS for the webapp endpoint, which mini-app code calls from browsers.
import type { Handler, Request } from './server.js';

export interface CorsPolicy {
  origins: readonly string[];
}

export function corsHeaders(req: Request, policy: CorsPolicy): Record<string, string> {
  const origin = req.headers.origin;
  const exposed = 'Retry-After, X-Request-Id';
  if (policy.origins.includes('*'))
    return { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': exposed };
  if (origin !== undefined && policy.origins.includes(origin)) {
    return { 'Access-Control-Allow-Origin': origin, Vary: 'Origin', 'Access-Control-Expose-Headers': exposed };
  }
  return { Vary: 'Origin' };
}

/** The preflight's own headers; Access-Control-Allow-Origin comes with every reply on these paths. */
export function corsPreflight(): Handler {
  return () => ({
    status: 204,
    headers: {
      'Access-Control-Allow-Methods': 'POST, OPTIONS',
      'Access-Control-Allow-Headers': 'Content-Type, Content-Encoding, X-Request-Id',
      'Access-Control-Max-Age': '86400',
    },
  });
}
