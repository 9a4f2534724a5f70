// Raw request bytes → parsed JSON, with the refusals a client can act on.
import { isUtf8 } from 'node:buffer';
import { createGunzip, gunzipSync } from 'node:zlib';
import type { Refusal } from './batch.js';
import { deeperThan } from './json.js';

/** `bytes` is the decompressed JSON text. */
export type Decoded = { ok: true; value: unknown; bytes: Uint8Array } | { ok: false; refusal: Refusal };

/** MAX_JSON_DEPTH by default: an event is three levels below the body, a property value four. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** What a body may cost: its decompressed size and how deep its JSON nests. */
export interface BodyLimits {
  maxBytes: number;
  maxDepth: number;
}

export function tooLarge(maxBytes: number): Refusal {
  return {
    code: 'payload_too_large',
    message: `The decompressed body exceeds ${maxBytes} bytes.`,
    details: { maxBytes },
  };
}

export function tooDeep(maxDepth: number): Refusal {
  return {
    code: 'invalid_json',
    message: `The body nests objects and arrays more than ${maxDepth} levels deep (MAX_JSON_DEPTH).`,
    details: { maxDepth },
  };
}

/** Decompresses a gzip body, bounded by `maxBytes`, so a gzip bomb costs no more than a plain body. */
export function gunzip(
  body: Uint8Array,
  maxBytes: number,
): { ok: true; bytes: Uint8Array } | { ok: false; refusal: Refusal } {
  try {
    return { ok: true, bytes: gunzipSync(body, { maxOutputLength: maxBytes }) };
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
      return { ok: false, refusal: tooLarge(maxBytes) };
    return { ok: false, refusal: { code: 'invalid_gzip' } };
  }
}

export function decodeJson(body: Uint8Array, gzip: boolean, limits: BodyLimits): Decoded {
  let bytes = body;
  if (gzip) {
    const inflated = gunzip(body, limits.maxBytes);
    if (!inflated.ok) return inflated;
    bytes = inflated.bytes;
  }
  if (!isUtf8(bytes)) return { ok: false, refusal: { code: 'invalid_utf8' } };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      refusal: { code: 'invalid_json', message: `The body is not valid JSON: ${(err as Error).message}` },
    };
  }
  if (deeperThan(value, limits.maxDepth)) return { ok: false, refusal: tooDeep(limits.maxDepth) };
  return { ok: true, value, bytes };
}

/**
 * The first `max` bytes of a gzip body's content, inflating no more than that (a chunk's worth).
 * `complete`: the content ended within them. `whole`: `body` is all of the request's body (else
 * a prefix of it, whose end is not an error). `enough`: asked after each chunk, true stops there.
 */
export function inflatePrefix(
  body: Uint8Array,
  max: number,
  whole: boolean,
  enough?: (sofar: Buffer) => boolean,
): Promise<{ ok: true; bytes: Buffer; complete: boolean } | { ok: false; refusal: Refusal }> {
  return new Promise((resolve) => {
    const z = createGunzip({ chunkSize: 8 * 1024 });
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (r: { ok: true; bytes: Buffer; complete: boolean } | { ok: false; refusal: Refusal }) => {
      if (settled) return;
      settled = true;
      z.destroy();
      resolve(r);
    };
    const sofar = () => Buffer.concat(chunks, size);
    z.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size > max) settle({ ok: true, bytes: sofar().subarray(0, max), complete: false });
      // What is inflated so far already decides: no more is.
      else if (enough?.(sofar())) settle({ ok: true, bytes: sofar(), complete: false });
    });
    z.on('end', () => settle({ ok: true, bytes: sofar(), complete: whole }));
    z.on('error', () =>
      settle(whole ? { ok: false, refusal: { code: 'invalid_gzip' } } : { ok: true, bytes: sofar(), complete: false }),
    );
    z.end(body);
  });
}
