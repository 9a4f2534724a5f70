// Raw request bytes → parsed JSON, with the refusals a client can act on.
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import type { Refusal } from './batch.js';

/** `bytes` is the decompressed JSON text. */
export type Decoded = { ok: true; value: unknown; bytes: Uint8Array } | { ok: false; refusal: Refusal };

/** `maxBytes` bounds the decompressed size too, so a gzip bomb costs no more than a plain body. */
export function decodeJson(body: Uint8Array, gzip: boolean, maxBytes: number): Decoded {
  let bytes = body;
  if (gzip) {
    try {
      bytes = gunzipSync(body, { maxOutputLength: maxBytes });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
        return { ok: false, refusal: { code: 'payload_too_large', message: `The decompressed body exceeds ${maxBytes} bytes.`, details: { maxBytes } } };
      }
      return { ok: false, refusal: { code: 'invalid_gzip' } };
    }
  }
  if (!isUtf8(bytes)) return { ok: false, refusal: { code: 'invalid_utf8' } };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  try {
    return { ok: true, value: JSON.parse(text), bytes };
  } catch (err) {
    return { ok: false, refusal: { code: 'invalid_json', message: `The body is not valid JSON: ${(err as Error).message}` } };
  }
}
