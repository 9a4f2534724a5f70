// The lake's routes: how far the export is, and funnels.
import { type AdminGuard, existingProject, jsonBody } from '../../admin/api.js';
import type { AdminStore } from '../../admin/store.js';
import { HttpError } from '../../base/errors.js';
import type { Sql } from '../../db/connect.js';
import type { Route } from '../../http/route.js';
import { projectFiles } from '../../lake/files.js';
import { readLake } from '../../lake/exporter.js';
import { readLakeId } from '../../lake/files.js';
import { adminOp, ok } from '../../openapi/admin.js';
import { ref } from '../../openapi/schemas.js';
import type { FunnelReader } from '../../reports/funnel.js';
import { checkFunnel } from '../../reports/funnel-request.js';

export interface LakeRouteOptions {
  sql: Sql;
  dir: string | null;
  funnels: FunnelReader | null;
}

/** Any body passes the reader's shape check: checkFunnel says what is wrong with it. */
const anyBody = Object.assign(() => true, { errors: null }) as never;

export function lakeRoutes(projects: AdminStore, guard: AdminGuard, o: LakeRouteOptions): Route[] {
  return [
    {
      method: 'get',
      path: '/admin/projects/:projectId/export',
      handler: guard(async (req) => {
        const projectId = await existingProject(projects, req);
        const id = o.dir === null ? null : readLakeId(o.dir);
        const lake = id === null ? null : await readLake(o.sql, id);
        const files = o.dir === null || lake === null ? { files: 0, bytes: 0 } : projectFiles(o.dir, projectId);
        const watermark = lake === null ? null : new Date(Date.parse(lake.exportedBefore));
        return {
          status: 200,
          body: {
            enabled: o.dir !== null,
            lakeId: lake?.lakeId ?? null,
            watermark: watermark?.toISOString() ?? null,
            historyDone: lake?.historyFrom === '-infinity',
            lagSeconds: watermark === null ? null : Math.max(0, (Date.now() - watermark.getTime()) / 1000),
            lastExportAt: lake?.exportedAt?.toISOString() ?? null,
            ...files,
          },
        };
      }),
      operation: adminOp({
        operationId: 'getExportStatus',
        summary: "How far the lake is: its watermark, lag, and the project's files",
        description:
          'The lake (docs/lake.md) holds every stored event as Parquet under EXPORT_DIR; an event is in it within EXPORT_EVERY_MS and a few seconds of being stored (up to 10 × EXPORT_EVERY_MS while ingestion keeps the service busy). `watermark`: every event received before it is in the lake, once `historyDone` (the events stored before the lake began are exported in the background, newest first).',
        ids: ['ProjectId'],
        success: { 200: ok('The lake as the database records it.', ref('LakeStatus')) },
      }),
    },
    {
      method: 'post',
      path: '/admin/projects/:projectId/reports/funnel',
      handler: guard(async (req, rb) => {
        const projectId = await existingProject(projects, req);
        const body = await jsonBody<unknown>(rb, anyBody);
        const checked = checkFunnel(body, new Date());
        if (!checked.ok) throw new HttpError('bad_request', { message: `${checked.message}.` });
        if (o.funnels === null) throw new HttpError('lake_off');
        return { status: 200, body: await o.funnels.funnel(projectId, checked.request) };
      }),
      operation: adminOp({
        operationId: 'getFunnel',
        summary: 'Users who went through steps in order, within a window of time, and where they dropped out',
        description: [
          "Per step, the users who reached it in order (each step at or after the previous one; strictly after when two steps in a row name the same event) within `windowS` seconds of their first step, among events whose `eventDate` falls in the range (UTC days, at most 366). A user may start at any of their first-step events; they count with the start that reaches furthest, and the seconds between that start's steps give the medians. Users are the events' `platform_user_id`; events without one are not counted.",
          "`where` compares a property in the bucket its value's JSON type names: an integer in propsLong (and propsFloat on bot_api), a fraction in propsFloat, a string in propsString, a boolean in propsBool (= and != only); `tg.<field>` names a promoted field. An event without the property does not match, whatever the operator.",
          '`by: "platform"`: per the `platform` property of the user\'s earliest event in the range that has one (the SDK\'s app_open carries it); `by: "campaign"`: per the user\'s first campaign, as the campaigns report files it. Users without one under key null.',
          'Read from the lake (Parquet, by the embedded columnar engine) and, for the events not in it yet, from the database: events stored a moment ago count. 409 `lake_off` when EXPORT_DIR is none; 503 `funnel_timeout` past FUNNEL_TIMEOUT_MS; 503 `funnels_busy` while two others are being counted on the instance.',
        ].join('\n\n'),
        ids: ['ProjectId'],
        body: 'FunnelRequest',
        success: { 200: ok('The funnel.', ref('Funnel')) },
        errors: ['lake_off', 'funnel_timeout', 'funnels_busy'],
      }),
    },
  ];
}
