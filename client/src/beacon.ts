// Request bodies for navigator.sendBeacon when the page is hidden or closed. Browsers allow about
// 64 KiB of beacons in flight per page, so bodies stay small: several small ones use that allowance
// better than one large one, and whatever does not fit waits in storage for the next session.

/** Bytes of one beacon body. */
export const BEACON_BODY_BYTES = 16_000;
/** Events in one beacon body: the server's limit per request. */
export const BEACON_MAX_EVENTS = 1000;

export interface BeaconBody<T> {
  json: string;
  /** The items this body carries. */
  items: T[];
}

const encoder = new TextEncoder();
const utf8Bytes = (s: string) => encoder.encode(s).byteLength;

/**
 * Packs items, in order, into JSON bodies `<head>item,item,...]}` of at most `maxBytes` bytes and
 * `maxEvents` items each. `head` is the body up to the opening bracket of its events array, e.g.
 * `{"botId":"…","auth":{"initData":"…"},"events":[`. An item too large for any body is skipped.
 * A generator, so the caller can stop at the first body the browser refuses without encoding the rest.
 */
export function* beaconBodies<T>(
  head: string,
  items: Iterable<T>,
  toJson: (item: T) => string,
  maxBytes = BEACON_BODY_BYTES,
  maxEvents = BEACON_MAX_EVENTS,
): Generator<BeaconBody<T>> {
  const tail = ']}';
  const empty = utf8Bytes(head) + utf8Bytes(tail);
  let parts: string[] = [];
  let batch: T[] = [];
  let bytes = empty;
  for (const item of items) {
    const json = toJson(item);
    const size = utf8Bytes(json);
    if (empty + size > maxBytes) continue;
    // A comma separates it from the previous item.
    if (batch.length > 0 && (batch.length >= maxEvents || bytes + 1 + size > maxBytes)) {
      yield { json: head + parts.join(',') + tail, items: batch };
      parts = [];
      batch = [];
      bytes = empty;
    }
    bytes += (batch.length > 0 ? 1 : 0) + size;
    parts.push(json);
    batch.push(item);
  }
  if (batch.length > 0) yield { json: head + parts.join(',') + tail, items: batch };
}

/** The webapp endpoint's body up to its events array. */
export function webappHead(botId: string, initData: string): string {
  return `{"botId":${JSON.stringify(botId)},"auth":{"initData":${JSON.stringify(initData)}},"events":[`;
}
