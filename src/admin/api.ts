// The admin HTTP API under /admin: provisioning of projects, bots and tokens, usage and reports.
// Every request needs `Authorization: Bearer <ADMIN_TOKEN>`; bodies are checked with ajv.
import { Ajv, type ValidateFunction } from 'ajv';
import { HttpError } from '../errors.js';
import type { BodyReader, Handler, HttpServer, Reply, Request } from '../http/server.js';
import type { ProjectStats } from '../quality/stats.js';
import { TokenBuckets } from '../limits/token-bucket.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../pipeline/decode.js';
import { parseUuid } from '../pipeline/ids.js';
import { deeperThan } from '../pipeline/json.js';
import { adminTokenMatches } from './admin-token.js';
import { ADMIN_BODIES } from './bodies.js';
import type { AdminStore, TokenLimits } from './store.js';

/** Local caches to drop at once when provisioning changes what they hold. */
export interface AdminHooks {
  /** Revoked, or its limits changed. */
  tokenChanged(tokenId: string): void;
  botChanged(botId: string): void;
  /** The allowance changed. */
  allowanceChanged(projectId: string): void;
  trackingPlanChanged(projectId: string): void;
  suppressionsChanged(projectId: string): void;
  /** An erasure was requested through this instance: its eraser starts now rather than at its next look. */
  erasureRequested(): void;
}

export const ajv = new Ajv({ allErrors: false, strict: true });

const schemas = {
  createProject: ajv.compile(ADMIN_BODIES.CreateProject),
  patchProject: ajv.compile(ADMIN_BODIES.PatchProject),
  createBot: ajv.compile(ADMIN_BODIES.CreateBot),
  patchBot: ajv.compile(ADMIN_BODIES.PatchBot),
  patchToken: ajv.compile(ADMIN_BODIES.PatchToken),
};

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

const toId = (v: number | string | null | undefined): string | null | undefined =>
  v === undefined ? undefined : v === null ? null : String(v);

/** A missing project (foreign key) is the caller's 404 and a taken messenger bot id their 409, not our 500. */
async function botWrite<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string };
    if (e.code === '23503') throw new HttpError('not_found', { message: 'No such project.' });
    if (e.code === '23505' && e.constraint_name === 'bots_messenger_bot_id_key')
      throw new HttpError('messenger_bot_id_taken');
    throw err;
  }
}

export interface AdminOptions {
  guard: AdminGuard;
  stats: (projectId: string) => ProjectStats;
  hooks: AdminHooks;
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

export function mountAdmin(server: HttpServer, store: AdminStore, o: AdminOptions): void {
  const { guard, stats, hooks } = o;
  const ok = (status: number, body?: unknown): Reply => (body === undefined ? { status } : { status, body });

  server
    .route(
      'post',
      '/admin/projects',
      guard(async (_req, rb) => {
        const b = await jsonBody<{ name: string; eventAllowance?: number | null }>(rb, schemas.createProject);
        const p = await store.createProject(b.name, b.eventAllowance ?? null);
        return ok(201, { projectId: p.projectId, project: p });
      }),
    )
    .route(
      'get',
      '/admin/projects',
      guard(async () => ok(200, await store.listProjects())),
    )
    .route(
      'get',
      '/admin/projects/:projectId',
      guard(async (req) => ok(200, found(await store.getProject(id(req)), 'project'))),
    )
    .route(
      'patch',
      '/admin/projects/:projectId',
      guard(async (req, rb) => {
        const projectId = id(req);
        const b = await jsonBody<{ name?: string; eventAllowance?: number | null }>(rb, schemas.patchProject);
        const p = found(await store.updateProject(projectId, b), 'project');
        hooks.allowanceChanged(projectId);
        return ok(200, p);
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/usage',
      guard(async (req) => ok(200, found(await store.usage(id(req)), 'project'))),
    )
    .route(
      'get',
      '/admin/projects/:projectId/stats',
      guard(async (req) => {
        const projectId = id(req);
        found(await store.getProject(projectId), 'project');
        return ok(200, stats(projectId));
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/bots',
      guard(async (req) => {
        const projectId = id(req);
        found(await store.getProject(projectId), 'project');
        return ok(200, await store.listBots(projectId));
      }),
    )
    .route(
      'post',
      '/admin/bots',
      guard(async (_req, rb) => {
        const b = await jsonBody<{
          messengerBotId?: number | string | null;
          projectId?: string | null;
          name?: string | null;
        }>(rb, schemas.createBot, {});
        const bot = await botWrite(
          store.createBot({
            messengerBotId: toId(b.messengerBotId) ?? null,
            projectId: b.projectId?.toLowerCase() ?? null,
            name: b.name ?? null,
          }),
        );
        return ok(201, { botId: bot.botId, bot });
      }),
    )
    .route(
      'get',
      '/admin/bots',
      guard(async () => ok(200, await store.listBots())),
    )
    .route(
      'get',
      '/admin/bots/:botId',
      guard(async (req) => ok(200, found(await store.getBot(id(req)), 'bot'))),
    )
    .route(
      'patch',
      '/admin/bots/:botId',
      guard(async (req, rb) => {
        const botId = id(req);
        const b = await jsonBody<{
          projectId?: string | null;
          messengerBotId?: number | string | null;
          miniAppIngest?: boolean;
          apiIngest?: boolean;
          name?: string | null;
        }>(rb, schemas.patchBot);
        const bot = found(
          await botWrite(
            store.updateBot(botId, {
              ...b,
              projectId: b.projectId === undefined ? undefined : (b.projectId?.toLowerCase() ?? null),
              messengerBotId: toId(b.messengerBotId),
            }),
          ),
          'bot',
        );
        hooks.botChanged(botId);
        return ok(200, bot);
      }),
    )
    .route(
      'post',
      '/admin/bots/:botId/tokens',
      guard(async (req) => {
        const t = found(await store.createToken(id(req)), 'bot');
        return ok(201, t);
      }),
    )
    .route(
      'get',
      '/admin/bots/:botId/tokens',
      guard(async (req) => {
        const botId = id(req);
        found(await store.getBot(botId), 'bot');
        return ok(200, await store.listTokens(botId));
      }),
    )
    .route(
      'del',
      '/admin/tokens/:tokenId',
      guard(async (req) => {
        const tokenId = id(req);
        if (!(await store.revokeToken(tokenId))) throw new HttpError('not_found', { message: 'No such token.' });
        hooks.tokenChanged(tokenId);
        return ok(204);
      }),
    )
    .route(
      'patch',
      '/admin/tokens/:tokenId',
      guard(async (req, rb) => {
        const tokenId = id(req);
        const limits = await jsonBody<TokenLimits>(rb, schemas.patchToken);
        const t = found(await store.setTokenLimits(tokenId, limits), 'token');
        hooks.tokenChanged(tokenId);
        return ok(200, t);
      }),
    );
}
