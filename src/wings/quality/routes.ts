// The routes of event quality: a project's tracking plan, its quarantine, and replay.
import { type AdminGuard, type AdminHooks, ajv, existingProject, found, jsonBody, pageLimit } from '../../admin/api.js';
import { ADMIN_BODIES } from '../../admin/bodies.js';
import type { AdminStore } from '../../admin/store.js';
import { HttpError } from '../../base/errors.js';
import type { Route } from '../../http/route.js';
import type { Request } from '../../http/server.js';
import { adminOp, limitQuery, list, ok, query } from '../../openapi/admin.js';
import type { Obj } from '../../openapi/operations.js';
import { ref } from '../../openapi/schemas.js';
import { MAX_PLAN_BYTES, type TrackingPlan } from '../../pipeline/plans.js';
import { REPLAY_MAX, replay, type ReplayDeps } from '../../quality/replay.js';
import type { QualityStore } from '../../quality/store.js';

const planShape = ajv.compile(ADMIN_BODIES.TrackingPlan);
const replayShape = ajv.compile(ADMIN_BODIES.ReplayRequest);

const CODE = /^[a-z_]{1,64}$/;

const codeQuery = (what: string): Obj =>
  query(
    'code',
    `Only entries with an error of this diagnostic code (${what}); not a code's shape (\`^[a-z_]{1,64}$\`): 400.`,
    { type: 'string', pattern: '^[a-z_]{1,64}$' },
  );

function codeOf(req: Request): string | undefined {
  const code = new URLSearchParams(req.query).get('code') ?? undefined;
  if (code !== undefined && !CODE.test(code))
    throw new HttpError('bad_request', { message: 'code must be a diagnostic code such as schema_violation.' });
  return code;
}

function queryOf(req: Request): { code: string | undefined; limit: number; before: number | undefined } {
  const q = new URLSearchParams(req.query);
  const code = codeOf(req);
  const limit = pageLimit(q);
  const beforeRaw = q.get('before');
  const before = beforeRaw === null ? undefined : Number(beforeRaw);
  if (before !== undefined && (!Number.isSafeInteger(before) || before < 1))
    throw new HttpError('bad_request', { message: 'before must be the next cursor of an earlier page.' });
  return { code, limit, before };
}

export interface QualityOptions {
  guard: AdminGuard;
  hooks: AdminHooks;
  replay: Omit<ReplayDeps, 'store'>;
  /** Compiles a plan off the main thread: null when it compiles, else the event whose schema does not. */
  compile: (plan: TrackingPlan) => Promise<{ eventName: string; message: string } | null>;
  maxJsonDepth: number;
}

export function qualityRoutes(projects: AdminStore, store: QualityStore, o: QualityOptions): Route[] {
  const { guard, hooks } = o;
  const project = (req: Request) => existingProject(projects, req);

  return [
    {
      method: 'put',
      path: '/admin/projects/:projectId/tracking-plan',
      handler: guard(async (req, rb) => {
        const projectId = await project(req);
        const raw = await rb();
        if (raw.byteLength > MAX_PLAN_BYTES)
          throw new HttpError('bad_request', {
            message: `The plan is ${raw.byteLength} bytes; at most ${MAX_PLAN_BYTES} are allowed.`,
            details: { maxBytes: MAX_PLAN_BYTES },
          });
        const plan = await jsonBody<TrackingPlan>(async () => raw, planShape, undefined, o.maxJsonDepth);
        const invalid = await o.compile(plan);
        if (invalid !== null) {
          throw new HttpError('bad_request', {
            message: `The schema of event ${JSON.stringify(invalid.eventName.slice(0, 64))} does not compile: ${invalid.message}`,
            details: { eventName: invalid.eventName, error: invalid.message },
          });
        }
        const stored = await store.putPlan(projectId, plan);
        hooks.trackingPlanChanged(projectId);
        return { status: 200, body: stored };
      }),
      options: { maxBodyBytes: 4 * MAX_PLAN_BYTES },
      operation: adminOp({
        operationId: 'putTrackingPlan',
        summary: "Set the project's tracking plan",
        description: [
          'Replaces the plan; its `version` goes up by one. Every schema is compiled first (JSON Schema draft 2020-12, unknown keywords refused): one that does not compile is 400 `bad_request` with `details: {eventName, error}`, and the plan in force stays.',
          'A body over 256 KiB is 400 `bad_request` with `details: {maxBytes}` (over 1 MiB, 413). The plan is in force at once on this instance and within 2 × `AUTH_CACHE_TTL_MS` on the others; events already stored are not checked again.',
        ].join('\n\n'),
        ids: ['ProjectId'],
        body: 'TrackingPlan',
        success: { 200: ok('The plan in force, with its version.', ref('StoredTrackingPlan')) },
        errorNotes: {
          400: 'Not a plan, a schema that does not compile (`details: {eventName, error}`), or over 256 KiB (`details: {maxBytes}`).',
          413: 'Over 1 MiB.',
        },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/tracking-plan',
      handler: guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: found(await store.getPlan(projectId), 'tracking plan') };
      }),
      operation: adminOp({
        operationId: 'getTrackingPlan',
        summary: "Read the project's tracking plan",
        ids: ['ProjectId'],
        success: { 200: ok('The plan in force.', ref('StoredTrackingPlan')) },
        description: 'An unknown project, or one without a plan, is 404.',
        errorNotes: { 404: 'No such project, or it has no plan.' },
      }),
    },
    {
      method: 'del',
      path: '/admin/projects/:projectId/tracking-plan',
      handler: guard(async (req) => {
        const projectId = await project(req);
        await store.deletePlan(projectId);
        hooks.trackingPlanChanged(projectId);
        return { status: 204 };
      }),
      operation: adminOp({
        operationId: 'deleteTrackingPlan',
        summary: "Remove the project's tracking plan",
        description:
          'Events are no longer checked against a plan (on other instances within 2 × `AUTH_CACHE_TTL_MS`). Removing a plan that is not there is 204 too; the next plan gets the next version.',
        ids: ['ProjectId'],
        success: { 204: { description: 'No plan in force.' } },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/quarantine/summary',
      handler: guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: await store.summary(projectId) };
      }),
      operation: adminOp({
        operationId: 'getQuarantineSummary',
        summary: 'Quarantined events per error code',
        ids: ['ProjectId'],
        success: { 200: ok('Most frequent first; empty when the quarantine is.', list('QuarantineCount')) },
      }),
    },
    {
      method: 'post',
      path: '/admin/projects/:projectId/quarantine/replay',
      handler: guard(async (req, rb) => {
        const projectId = await project(req);
        const b = await jsonBody<{ ids?: number[]; code?: string; dryRun?: boolean }>(rb, replayShape, {});
        return {
          status: 200,
          body: await replay({ ...o.replay, store }, projectId, { ids: b.ids, code: b.code }, b.dryRun === true),
        };
      }),
      operation: adminOp({
        operationId: 'replayQuarantine',
        summary: 'Replay quarantined events through the current pipeline and plan',
        description: [
          `Takes the chosen entries (oldest first, at most ${REPLAY_MAX} per call; call again for more) and runs each as if it arrived now on its original endpoint and connection (token or bot), under the tracking plan in force.`,
          'Events that pass are stored, billed by the usual rules (deduplicated by eventId) and leave the quarantine; events whose eventId is stored already count as `duplicated` and leave too; the others stay, with the diagnostics of this replay. An entry cut to its first 64 KiB always stays rejected.',
          '`dryRun: true` answers the counts a replay would and changes nothing (it does not look at the allowance).',
          'Replayed events count against the allowance like any others: 402 `allowance_exhausted` when it is used up. Should it run out during the call, the answer is 402 too: the events stored until then have left the quarantine, the others stay for the next replay.',
        ].join('\n\n'),
        ids: ['ProjectId'],
        body: 'ReplayRequest',
        bodyRequired: false,
        errors: ['allowance_exhausted', 'unavailable', 'overloaded'],
        errorNotes: {
          402: "The project's allowance for this month is used up.",
          503: 'The allowance could not be read, or the writer is busy; retry after Retry-After (stored events are recognised).',
        },
        success: { 200: ok('What became of the chosen entries.', ref('ReplayResult')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/quarantine',
      handler: guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: await store.listQuarantine(projectId, queryOf(req)) };
      }),
      operation: adminOp({
        operationId: 'listQuarantine',
        summary: 'List quarantined events, newest first',
        description:
          'Events rejected with an error after authentication, on either endpoint, with their diagnostics and the event as sent. Pages of `limit`; pass `next` as `before` for the next page.',
        ids: ['ProjectId'],
        errors: ['bad_request'],
        errorNotes: { 400: 'A `code`, `limit` or `before` out of shape.' },
        query: [
          codeQuery('e.g. `schema_violation`'),
          limitQuery(),
          query(
            'before',
            'The `next` of the page before: only entries with a smaller `id`. Not a positive integer: 400.',
            { type: 'integer', minimum: 1 },
          ),
        ],
        success: { 200: ok('One page.', ref('QuarantinePage')) },
      }),
    },
    {
      method: 'del',
      path: '/admin/projects/:projectId/quarantine',
      handler: guard(async (req) => {
        const projectId = await project(req);
        await store.clear(projectId, codeOf(req));
        return { status: 204 };
      }),
      operation: adminOp({
        operationId: 'clearQuarantine',
        summary: 'Delete quarantined events',
        description:
          "All of the project's entries, or those with an error of `code`. They cannot be replayed afterwards.",
        ids: ['ProjectId'],
        errors: ['bad_request'],
        errorNotes: { 400: 'A `code` out of shape.' },
        query: [codeQuery('all when absent')],
        success: { 204: { description: 'Deleted.' } },
      }),
    },
  ];
}
