// The privacy routes: erasure requests, suppressions, and a user's data as NDJSON.
import { type AdminGuard, type AdminHooks, ajv, existingProject, found, jsonBody, pageLimit } from '../../admin/api.js';
import { ADMIN_BODIES } from '../../admin/bodies.js';
import type { AdminStore } from '../../admin/store.js';
import type { Sql } from '../../db/connect.js';
import { HttpError } from '../../base/errors.js';
import type { Route } from '../../http/route.js';
import type { Request } from '../../http/server.js';
import { adminOp, limitQuery, ok, query } from '../../openapi/admin.js';
import { ref } from '../../openapi/schemas.js';
import { exportsRunning, exportUser, MAX_EXPORTS } from '../../privacy/export.js';
import { decodeCursor, type PrivacyStore } from '../../privacy/store.js';

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
  /** An erasure was requested through this instance: the eraser starts on it now rather than at its next look. */
  erasureRequested(): void;
}

export function privacyRoutes(projects: AdminStore, store: PrivacyStore, o: PrivacyOptions): Route[] {
  const { guard, hooks } = o;
  const project = (req: Request) => existingProject(projects, req);
  return [
    {
      method: 'post',
      path: '/admin/projects/:projectId/erasures',
      handler: guard(async (req, rb) => {
        const projectId = await project(req);
        const b = await jsonBody<{ userIds: string[]; suppress?: boolean }>(rb, erasureShape);
        const ids = [...new Set(b.userIds)];
        for (const id of ids) userIdParam(id);
        const erasure = await store.request(projectId, ids, b.suppress === true);
        if (erasure.suppress) hooks.suppressionsChanged(projectId);
        o.erasureRequested();
        return { status: 202, body: erasure };
      }),
      operation: adminOp({
        operationId: 'requestErasure',
        summary: "Erase users' data (and optionally keep it from coming back)",
        description: [
          "Removes, in the background, every row that names the users: their events in every monthly partition, their profile and first/last seen (users), the quarantined events they sent or that name them in their body, and their rows in the report tables (first day and campaign, active days; payments stay counted without the user). Counts already made stay: this month's usage (a ledger) and the report aggregates (numbers, not people). Ingestion never waits on it: it runs in transactions of bounded size, one instance at a time, and resumes after a restart.",
          '`suppress: true` also drops their later events on both endpoints before storage (`user_suppressed`), on every instance within 2 × AUTH_CACHE_TTL_MS, until lifted; the erasure then starts reading the events only once that time and WRITE_TIMEOUT_MS have passed, so that nothing of theirs lands behind it. Events stored while an erasure without suppress runs may outlive it.',
          'A step that fails (a lock held long, the database away) is retried, backing off from 2 to 32 s; six failures in a row mark the erasure `failed` (`error` says why); request it again to finish it.',
          'The erasure record keeps the ids while it runs and, once done, only those still suppressed; otherwise their count and SHA-256 digest.',
        ].join('\n\n'),
        ids: ['ProjectId'],
        body: 'ErasureRequest',
        success: { 202: ok('Accepted; poll it by `erasureId`.', ref('Erasure')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/erasures',
      handler: guard(async (req) => {
        const projectId = await project(req);
        const q = new URLSearchParams(req.query);
        const before = q.get('before') ?? undefined;
        if (before !== undefined && decodeCursor(before) === null)
          throw new HttpError('bad_request', { message: 'before must be the next cursor of an earlier page.' });
        // A page of erasures can name 5,000 ids each: at most 100 per page.
        return { status: 200, body: await store.list(projectId, Math.min(100, pageLimit(q)), before) };
      }),
      operation: adminOp({
        operationId: 'listErasures',
        summary: 'Erasure requests, newest first',
        ids: ['ProjectId'],
        errors: ['bad_request'],
        query: [
          limitQuery('Entries per page, 1 to 1000, served up to 100 (default 100); anything else: 400.'),
          query('before', 'The `next` of the page before; anything else: 400.', { type: 'string' }),
        ],
        success: { 200: ok('One page.', ref('ErasurePage')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/erasures/:erasureId',
      handler: guard(async (req) => {
        const projectId = await project(req);
        const erasureId = req.params[1]!;
        if (!UUID.test(erasureId)) throw new HttpError('not_found', { message: 'No such erasure.' });
        return { status: 200, body: found(await store.get(projectId, erasureId), 'erasure') };
      }),
      operation: adminOp({
        operationId: 'getErasure',
        summary: 'An erasure request and its progress',
        ids: ['ProjectId', 'ErasureId'],
        success: { 200: ok('The erasure.', ref('Erasure')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/suppressions',
      handler: guard(async (req) => {
        const projectId = await project(req);
        const q = new URLSearchParams(req.query);
        const after = q.get('after') ?? undefined;
        if (after !== undefined) userIdParam(after);
        return { status: 200, body: await store.suppressions(projectId, pageLimit(q), after) };
      }),
      operation: adminOp({
        operationId: 'listSuppressions',
        summary: 'Suppressed users, by id',
        ids: ['ProjectId'],
        errors: ['bad_request'],
        query: [limitQuery(), query('after', 'The `next` of the page before: ids above it.', { type: 'string' })],
        success: { 200: ok('One page.', ref('SuppressionPage')) },
      }),
    },
    {
      method: 'del',
      path: '/admin/projects/:projectId/suppressions/:userId',
      handler: guard(async (req) => {
        const projectId = await project(req);
        const userId = userIdParam(req.params[1]);
        if (!(await store.lift(projectId, userId)))
          throw new HttpError('not_found', { message: 'No such suppression.' });
        hooks.suppressionsChanged(projectId);
        return { status: 204 };
      }),
      operation: adminOp({
        operationId: 'liftSuppression',
        summary: "Lift a user's suppression",
        description:
          'Their events are stored again on every instance within 2 × AUTH_CACHE_TTL_MS. The erasure that suppressed them no longer keeps their id once it is done.',
        ids: ['ProjectId', 'UserId'],
        errors: ['bad_request'],
        success: { 204: { description: 'Lifted.' } },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/users/:userId/export',
      handler: guard(async (req) => {
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
      operation: adminOp({
        operationId: 'exportUser',
        summary: 'Everything held on a user, as NDJSON',
        description:
          'One JSON object per line, `{type, data}`, sent as it is read: `profile` (the users row), `campaign` (first day, first and latest campaign), `suppression`, one `active_day` per day they were active and one `payment` per payment in the report tables, one `billing_key` per message in their private chat the billing ledger keeps, one `event` per stored event of every partition (the row as stored), one `quarantined` per quarantined event they sent or that names them, and last `end` with the count of each. A response without its `end` line was cut short (an export is cut after 10 minutes). At most 2 run at once per instance: 503 `overloaded` with Retry-After beyond.',
        ids: ['ProjectId', 'UserId'],
        errors: ['bad_request', 'overloaded'],
        success: {
          200: {
            description: 'NDJSON.',
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
        },
      }),
    },
  ];
}
