// The admin API's operations: every one needs the admin token and may answer 401, 429 `auth_rate_limited` and 500;
// one with a body also 400 and 413, one with an id in its path also 404.
import type { ErrorCode } from '../base/errors.js';
import { json, type Obj, operation, type OperationSpec, param } from './operations.js';
import { ref } from './schemas.js';

export interface AdminSpec {
  operationId: string;
  summary: string;
  description?: string;
  ids?: ('ProjectId' | 'BotId' | 'TokenId' | 'ErasureId' | 'UserId')[];
  /** Query parameters. */
  query?: Obj[];
  /** Component name of the JSON body. */
  body?: string;
  bodyRequired?: boolean;
  success: OperationSpec['success'];
  /** Codes beyond 401 (and 400/413 with a body, 404 with an id). */
  errors?: ErrorCode[];
  errorNotes?: OperationSpec['errorNotes'];
}

export function adminOp(a: AdminSpec): Obj {
  const errors: ErrorCode[] = ['admin_unauthorized', 'auth_rate_limited'];
  if (a.body !== undefined) errors.push('bad_request', 'payload_too_large');
  if (a.ids !== undefined) errors.push('not_found');
  errors.push(...(a.errors ?? []), 'internal');
  return operation({
    operationId: a.operationId,
    summary: a.summary,
    ...(a.description === undefined ? {} : { description: a.description }),
    tags: ['admin'],
    security: 'AdminToken',
    parameters: [...(a.ids ?? []).map(param), ...(a.query ?? [])],
    ...(a.body === undefined ? {} : { requestBody: { required: a.bodyRequired ?? true, content: json(ref(a.body)) } }),
    success: a.success,
    errors: [...new Set(errors)],
    ...(a.errorNotes === undefined ? {} : { errorNotes: a.errorNotes }),
  });
}

export const ok = (description: string, schema: Obj) => ({ description, content: json(schema) });
export const list = (name: string): Obj => ({ type: 'array', items: ref(name) });

export const query = (name: string, description: string, schema: Obj): Obj => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

/** `limit` of a paged list. */
export const limitQuery = (description = 'Entries per page, 1 to 1000 (default 100); anything else: 400.'): Obj =>
  query('limit', description, { type: 'integer', minimum: 1, maximum: 1000, default: 100 });
