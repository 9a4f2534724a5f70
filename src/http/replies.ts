// The one place where failures become answers: HTTP refusals as they are, and the domain errors of
// the pipeline (quota, worker pool, credential lookups, the writer) mapped to codes of the error table.
import { LookupFailed } from '../cache/refreshing-cache.js';
import { ERRORS, HttpError } from '../base/errors.js';
import { PoolOverloaded, TaskFailed } from '../worker/errors.js';
import { QuotaRefusal } from '../limits/quota.js';
import { WriteError } from '../writer/sink.js';
import type { Reply } from './server.js';

/** The client went away before its body arrived: nobody reads the answer. */
export class Aborted extends Error {}

function toHttpError(err: unknown): HttpError | null {
  if (err instanceof HttpError) return err;
  if (err instanceof QuotaRefusal) {
    switch (err.reason) {
      case 'exhausted':
        return new HttpError('allowance_exhausted');
      case 'unreadable':
        return new HttpError('unavailable', {
          message: "The project's allowance could not be read; retry shortly.",
          retryAfterS: 2,
        });
      case 'settling':
        return new HttpError('unavailable', {
          message: 'Events near the end of the allowance are still being committed; retry shortly.',
          retryAfterS: 1,
        });
    }
  }
  if (err instanceof TaskFailed && err.byInput)
    return new HttpError('bad_request', {
      message: 'The body could not be processed: it is too large or too deeply nested for this service.',
    });
  if (err instanceof PoolOverloaded)
    return new HttpError('overloaded', { message: 'The service is overloaded; retry shortly.', retryAfterS: 1 });
  if (err instanceof LookupFailed)
    return new HttpError('unavailable', {
      message: `The ${err.what} could not be checked right now; retry shortly.`,
      retryAfterS: 2,
    });
  if (err instanceof WriteError) {
    switch (err.kind) {
      case 'refused':
        return new HttpError('storage_refused', {
          message: `The database refused to store these events; nothing of this request was stored. ${err.message}`,
          details: { sqlstate: err.sqlstate ?? null },
        });
      case 'overloaded':
        return new HttpError('overloaded', {
          message:
            'Too many events are waiting for the database; retry after the delay in Retry-After. Nothing of this request was stored.',
          retryAfterS: 1,
        });
      case 'unavailable':
        return new HttpError('unavailable', {
          message:
            'The events could not be confirmed as committed. Retry after the delay in Retry-After: events already stored are recognised by eventId and not stored twice.',
          retryAfterS: 1,
        });
    }
  }
  return null;
}

export function replyFor(err: unknown): Reply {
  if (err instanceof Aborted) return { status: 400, body: { error: 'bad_request', message: err.message } };
  const e = toHttpError(err);
  if (e === null) return { status: 500, body: { error: 'internal', message: ERRORS.internal.message } };
  const headers: Record<string, string> = { ...e.headers };
  if (e.retryAfterS !== undefined) headers['Retry-After'] = String(e.retryAfterS);
  else if (e.status === 503 || e.status === 429) headers['Retry-After'] = '1';
  const reply: Reply = { status: e.status, body: e.body(), headers };
  // A client past its failed-authentication budget gets its refusal late (see the tarpit).
  if (e.code === 'auth_rate_limited') reply.late = true;
  return reply;
}

/** The answer of a path no route serves (and of a page file that does not exist), from the error table. */
export const NOT_FOUND: Reply = { status: 404, body: new HttpError('not_found').body() };
