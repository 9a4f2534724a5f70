// What every route of the admin API under /admin shares: the admin token's guard (`Authorization: Bearer
// <ADMIN_TOKEN>`), bodies checked with ajv, ids and pages read from the request, and the hooks that drop local caches.
import { Ajv, type ValidateFunction } from 'ajv';
import { HttpError } from '../base/errors.js';
import type { BodyReader, Handler, Request } from '../http/server.js';
import { TokenBuckets } from '../limits/token-bucket.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../pipeline/decode.js';
import { parseUuid } from '../pipeline/ids.js';
import { deeperThan } from '../pipeline/json.js';
import { adminTokenMatches } from './admin-token.js';
import type { AdminStore } from './store.js';

/** Local caches to drop at once when provisioning changes what they hold. */
export interface AdminHooks {
  /** Revoked, or its limits changed. */
  tokenChanged(tokenId: string): void;
  botChanged(botId: string): void;
  /** The allowance changed. */
  allowanceChanged(projectId: string): void;
  trackingPlanChanged(projectId: string): void;
  suppressionsChanged(projectId: string): void;
}

export const ajv = new Ajv({ allErrors: false, strict: true });

export async function jsonBody<T>(
  readBody: BodyReader,
  validate: ValidateFunction,
  empty: unknown = undefined,
  maxDepth = DEFAULT_MAX_JSON_DEPTH,
): Promise<T> {
  const raw = await readBody();
  let body: unknown = empty;
  if (raw.length > 0) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpError('bad_request', { message: 'The body is not valid JSON.' });
    }
    if (deeperThan(body, maxDepth))
      throw new HttpError('bad_request', {
        message: `The body nests objects and arrays more than ${maxDepth} levels deep (MAX_JSON_DEPTH).`,
        details: { maxDepth },
      });
  }
  if (!validate(body)) {
    const e = validate.errors?.[0];
    const where = e?.instancePath ? e.instancePath.slice(1) : 'body';
    throw new HttpError('bad_request', {
      message: `${where} ${e?.message ?? 'is invalid'}`,
      details: { errors: validate.errors },
    });
  }
  return body as T;
}

export function id(req: Request, i = 0): string {
  const v = parseUuid(req.params[i]);
  if (v === null) throw new HttpError('not_found', { message: 'No such resource.' });
  return v;
}

/** The route's project id, once the project is known to exist (404 otherwise). */
export async function existingProject(projects: AdminStore, req: Request): Promise<string> {
  const projectId = id(req);
  found(await projects.getProject(projectId), 'project');
  return projectId;
}

/** `limit` of a paged list: 1–1000, 100 when absent; anything else is 400. */
export function pageLimit(q: URLSearchParams): number {
  const raw = q.get('limit');
  const n = raw === null ? 100 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new HttpError('bad_request', { message: 'limit must be an integer from 1 to 1000.' });
  return n;
}

export function found<T>(v: T | null, what: string): T {
  if (v === null) throw new HttpError('not_found', { message: `No such ${what}.` });
  return v;
}

export interface AdminGuard {
  /** The handler, served only with the admin token. */
  (h: Handler): Handler;
  /** For the live view's sign-in message. */
  authorize(token: string): boolean;
  /** Charges a failed sign-in to the address; false when it is past its budget. */
  failed(address: string): boolean;
}

/**
 * The admin token's guard: the right token is always served; an address that presented a wrong or
 * missing one too often within a minute is answered 429 until its budget refills. One budget for the
 * admin API and the live view.
 */
export function adminGuard(adminToken: string, authFailuresPerMin: number): AdminGuard {
  const failures = new TokenBuckets({ burst: authFailuresPerMin, perMin: authFailuresPerMin, maxKeys: 100_000 });
  const guard = ((h: Handler): Handler =>
    (req, readBody) => {
      if (adminTokenMatches(adminToken, req.headers.authorization)) return h(req, readBody);
      const r = failures.take(req.address);
      if (!r.ok) throw new HttpError('auth_rate_limited', { retryAfterS: r.retryAfterS });
      throw new HttpError('admin_unauthorized');
    }) as AdminGuard;
  guard.authorize = (token) => adminTokenMatches(adminToken, `Bearer ${token}`);
  guard.failed = (address) => failures.take(address).ok;
  return guard;
}
