// @ts-check
// The bounds the service declares in its OpenAPI document (public, no token), read once: the page never keeps copies
// of them. Each is null until the document has arrived, or when it could not be read; the service checks them anyway.

/** @type {{ replayMax: number | null, erasureMax: number | null }} */
export const limits = { replayMax: null, erasureMax: null };

/** @type {Promise<void> | null} */
let reading = null;

/** @param {unknown} v */
const bound = (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : null);

/** Reads them once; later calls wait for the same read, or try again after one that failed. */
export function readLimits() {
  reading ??= (async () => {
    try {
      const res = await fetch('/openapi.json', { cache: 'no-store', signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`${res.status}`);
      const schemas = (await res.json())?.components?.schemas;
      limits.replayMax = bound(schemas?.ReplayRequest?.properties?.ids?.maxItems);
      limits.erasureMax = bound(schemas?.ErasureRequest?.properties?.userIds?.maxItems);
    } catch {
      // Unknown for now: what depends on them says less, and the next read tries again.
      reading = null;
    }
  })();
  return reading;
}
