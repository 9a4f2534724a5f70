// The admin API of event quality: a project's tracking plan, its quarantine, and replay.
import { HttpError } from '../errors.js';
import type { HttpServer, Request } from '../http/server.js';
import { replay, type ReplayDeps } from '../quality/replay.js';
import { MAX_PLAN_BYTES, type TrackingPlan } from '../pipeline/plans.js';
import { type AdminGuard, type AdminHooks, ajv, existingProject, found, jsonBody, pageLimit } from './api.js';
import type { QualityStore } from '../quality/store.js';
import { ADMIN_BODIES } from './bodies.js';
import type { AdminStore } from './store.js';

const planShape = ajv.compile(ADMIN_BODIES.TrackingPlan);
const replayShape = ajv.compile(ADMIN_BODIES.ReplayRequest);

const CODE = /^[a-z_]{1,64}$/;

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

export function mountQuality(server: HttpServer, projects: AdminStore, store: QualityStore, o: QualityOptions): void {
  const { guard, hooks } = o;
  const project = (req: Request) => existingProject(projects, req);

  server
    .route(
      'put',
      '/admin/projects/:projectId/tracking-plan',
      guard(async (req, rb) => {
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
      { maxBodyBytes: 4 * MAX_PLAN_BYTES },
    )
    .route(
      'get',
      '/admin/projects/:projectId/tracking-plan',
      guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: found(await store.getPlan(projectId), 'tracking plan') };
      }),
    )
    .route(
      'del',
      '/admin/projects/:projectId/tracking-plan',
      guard(async (req) => {
        const projectId = await project(req);
        await store.deletePlan(projectId);
        hooks.trackingPlanChanged(projectId);
        return { status: 204 };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/quarantine/summary',
      guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: await store.summary(projectId) };
      }),
    )
    .route(
      'post',
      '/admin/projects/:projectId/quarantine/replay',
      guard(async (req, rb) => {
        const projectId = await project(req);
        const b = await jsonBody<{ ids?: number[]; code?: string; dryRun?: boolean }>(rb, replayShape, {});
        return {
          status: 200,
          body: await replay({ ...o.replay, store }, projectId, { ids: b.ids, code: b.code }, b.dryRun === true),
        };
      }),
    )
    .route(
      'get',
      '/admin/projects/:projectId/quarantine',
      guard(async (req) => {
        const projectId = await project(req);
        return { status: 200, body: await store.listQuarantine(projectId, queryOf(req)) };
      }),
    )
    .route(
      'del',
      '/admin/projects/:projectId/quarantine',
      guard(async (req) => {
        const projectId = await project(req);
        await store.clear(projectId, codeOf(req));
        return { status: 204 };
      }),
    );
}
