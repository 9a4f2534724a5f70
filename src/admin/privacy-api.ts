// The admin API's privacy routes: erasure requests, suppressions, and a user's data as NDJSON.
import { HttpError } from '../errors.js';
import type { HttpServer, Request } from '../http/server.js';
import { exportsRunning, exportUser, MAX_EXPORTS } from '../privacy/export.js';
import { decodeCursor, type PrivacyStore } from '../privacy/store.js';
import type { Sql } from '../db/connect.js';
import { type AdminGuard, type AdminHooks, ajv, existingProject, found, jsonBody, pageLimit } from './api.js';
import { ADMIN_BODIES } from './bodies.js';
import type { AdminStore } from './store.js';

const erasureShape = ajv.compile(ADMIN_BODIES.ErasureRequest);
const INT64_MAX = 2n ** 63n - 1n;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function userIdParam(raw: string | undefined): string {
  if (raw === undefined || !/^[1-9][0-9]{0,18}$/.test(raw) || BigInt(raw) > INT64_MAX)
    throw new HttpError('bad_request', { message: 'userId must be a positive 64-bit integer.' });
  return raw;
}

export interface PrivacyOptions {
  guard: AdminGuard;
  hooks: AdminHooks;
  sql: Sql;
}

export function mountPrivacy(server: HttpServer, projects: AdminStore, store: PrivacyStore, o: PrivacyOptions): void {
  const { guard, hooks } = o;
  const project = (req: Request) => existingProject(projects, req);
  server
    .route(
      'post',
      '/admin/projects/:projectId/erasures',
      guard(async (req, rb) => {
        const projectId = await project(req);
        const b = await jsonBody<{ userIds: string[]; suppress?: boolean }>(rb, erasureShape);
        const ids = [...new Set(b.userIds)];
        for (const id of ids) userIdParam(id);
        const erasure = await store.request(projectId, ids, b.suppress === true);
        if (erasure.suppress) hooks.suppressionsChanged(projectId);
        hooks.erasureRequested();
        return { status: 202, body: erasure };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/erasures',
      guard(async (req) => {
        const projectId = await project(req);
        const q = new URLSearchParams(req.query);
        const before = q.get('before') ?? undefined;
        if (before !== undefined && decodeCursor(before) === null)
          throw new HttpError('bad_request', { message: 'before must be the next cursor of an earlier page.' });
        // A page of erasures can name 5,000 ids each: at most 100 per page.
        return { status: 200, body: await store.list(projectId, Math.min(100, pageLimit(q)), before) };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/erasures/:erasureId',
      guard(async (req) => {
        const projectId = await project(req);
        const erasureId = req.params[1]!;
        if (!UUID.test(erasureId)) throw new HttpError('not_found', { message: 'No such erasure.' });
        return { status: 200, body: found(await store.get(projectId, erasureId), 'erasure') };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/suppressions',
      guard(async (req) => {
        const projectId = await project(req);
        const q = new URLSearchParams(req.query);
        const after = q.get('after') ?? undefined;
        if (after !== undefined) userIdParam(after);
        return { status: 200, body: await store.suppressions(projectId, pageLimit(q), after) };
      }),
    )
    .route(
      'del',
      '/admin/projects/:projectId/suppressions/:userId',
      guard(async (req) => {
        const projectId = await project(req);
        const userId = userIdParam(req.params[1]);
        if (!(await store.lift(projectId, userId)))
          throw new HttpError('not_found', { message: 'No such suppression.' });
        hooks.suppressionsChanged(projectId);
        return { status: 204 };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/users/:userId/export',
      guard(async (req) => {
        const projectId = await project(req);
        const userId = userIdParam(req.params[1]);
        // Each export holds a connection of the pool ingestion shares: a few at a time.
        if (exportsRunning() >= MAX_EXPORTS)
          throw new HttpError('overloaded', {
            message: `${MAX_EXPORTS} exports are running on this instance; retry after the delay in Retry-After.`,
            retryAfterS: 10,
          });
        return {
          status: 200,
          contentType: 'application/x-ndjson',
          headers: { 'Content-Disposition': `attachment; filename="user-${userId}.ndjson"` },
          stream: exportUser(o.sql, projectId, userId),
        };
      }),
    );
}
