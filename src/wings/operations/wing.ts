// Operations: the probes, the Prometheus metrics, the OpenAPI document, where to go from the bare address, and the
// 404 of every path no route answers (registered last).
import { PATHS } from '../../base/endpoints.js';
import type { ErrorCode } from '../../base/errors.js';
import { NOT_FOUND } from '../../http/replies.js';
import type { Handler, Reply } from '../../http/server.js';
import { ok } from '../../openapi/admin.js';
import { json, operation, type OperationSpec } from '../../openapi/operations.js';
import { ref } from '../../openapi/schemas.js';
import { operationsSchemas } from './schemas.js';
import type { Shared, Wing } from '../wing.js';

const op = (spec: Omit<OperationSpec, 'tags' | 'errors'> & { errors?: ErrorCode[] }) =>
  operation({ tags: ['operations'], errors: [], ...spec });

const ROOT_POINTERS = {
  service: 'tg-ingest',
  adminPage: `${PATHS.admin}/`,
  openapi: PATHS.openapi,
  ingestion: { bot_api: `POST ${PATHS.bot_api[0]}`, webapp: `POST ${PATHS.webapp[0]}` },
  docs: 'docs/api.md in the repository: events, responses, diagnostics',
};

/**
 * `closing`: true once the service is shutting down; `document`: the OpenAPI document of every wing's routes, as JSON.
 */
export function operationsWing(s: Shared, closing: () => boolean, document: () => string): Wing {
  const ready = (): Reply => {
    if (closing()) return { status: 503, body: { status: 'shutting_down' }, headers: { 'Retry-After': '1' } };
    const state = s.readiness.state;
    return state === 'ready'
      ? { status: 200, body: { status: 'ready' } }
      : { status: 503, body: { status: state }, headers: { 'Retry-After': '1' } };
  };
  // Beside the public endpoints /metrics needs the admin token (Prometheus sends it as a bearer token); on a listener
  // of its own, reachable only where it is bound, it needs none.
  const metrics: Handler = async () => ({
    status: 200,
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    body: await s.metrics.text(),
  });
  const every = { listener: 'every' } as const;
  return {
    name: 'operations',
    schemas: operationsSchemas(),
    routes: [
      {
        method: 'get',
        path: PATHS.metrics,
        handler: s.config.adminPort === null ? s.guard(metrics) : metrics,
        operation: op({
          operationId: 'metrics',
          summary: 'Prometheus metrics',
          description:
            'On the main listener it needs the admin token (`Authorization: Bearer`, as Prometheus sends it); with `ADMIN_PORT` it is served on the admin listener without one.',
          errors: ['admin_unauthorized', 'auth_rate_limited', 'internal'],
          success: {
            200: {
              description: 'Prometheus text exposition format 0.0.4.',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        }),
      },
      {
        method: 'get',
        path: PATHS.openapi,
        handler: () => ({ status: 200, body: document() }),
        operation: op({
          operationId: 'openapi',
          summary: 'This document',
          success: {
            200: ok('The OpenAPI 3.1 document.', {
              type: 'object',
              required: ['openapi', 'info', 'paths'],
              properties: {
                openapi: { type: 'string', pattern: '^3\\.1\\.' },
                info: { type: 'object' },
                paths: { type: 'object' },
              },
            }),
          },
        }),
        ...every,
      },
      {
        // A person who opens the bare address learns where to go.
        method: 'get',
        path: PATHS.root,
        handler: () => ({ status: 200, body: ROOT_POINTERS }),
        operation: op({
          operationId: 'root',
          summary: 'Where to go from the bare address',
          success: {
            200: ok('Pointers to the admin page, this document, the ingestion endpoints and the docs.', {
              type: 'object',
              required: ['service', 'adminPage', 'openapi', 'ingestion', 'docs'],
              properties: {
                service: { type: 'string', const: 'tg-ingest' },
                adminPage: { type: 'string' },
                openapi: { type: 'string' },
                ingestion: { type: 'object' },
                docs: { type: 'string' },
              },
            }),
          },
        }),
        ...every,
      },
      {
        method: 'get',
        path: PATHS.health,
        handler: () => ({ status: 200, body: { status: 'ok' } }),
        operation: op({
          operationId: 'healthz',
          summary: 'Liveness',
          success: { 200: ok('The process is up.', ref('Health')) },
        }),
        ...every,
      },
      {
        method: 'get',
        path: PATHS.ready,
        handler: ready,
        operation: op({
          operationId: 'readyz',
          summary: 'Readiness',
          success: {
            200: ok('The database answers and migrations are done.', ref('Readiness')),
            503: {
              description:
                'Not ready: shutting down, migrations pending, or the database unreachable (then with Retry-After).',
              content: json(ref('Readiness')),
              headers: { 'Retry-After': 'optional' },
            },
          },
        }),
        ...every,
      },
      {
        method: 'any',
        path: '/*',
        handler: () => NOT_FOUND,
        ...every,
      },
    ],
  };
}
