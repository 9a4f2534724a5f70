// Request headers both endpoints check before any body work.
import { HttpError } from '../base/errors.js';
import type { Request } from '../http/server.js';

/** True for gzip; 415 for an encoding we do not decode. */
export function isGzip(req: Request): boolean {
  const enc = req.headers['content-encoding']?.trim().toLowerCase();
  if (enc === undefined || enc === '' || enc === 'identity') return false;
  if (enc === 'gzip' || enc === 'x-gzip') return true;
  throw new HttpError('unsupported_encoding', {
    message: `Content-Encoding "${enc.slice(0, 40)}" is not supported; use gzip or none.`,
  });
}

/** JSON, or absent; the webapp endpoint also takes text/plain, which browsers send without a CORS preflight. */
export function checkContentType(req: Request, allowTextPlain: boolean): void {
  const ct = req.headers['content-type'];
  if (ct === undefined || ct === '') return;
  const type = ct.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || (allowTextPlain && type === 'text/plain')) return;
  throw new HttpError('unsupported_media_type', {
    message: `Content-Type "${type.slice(0, 60)}" is not supported; send application/json.`,
  });
}
