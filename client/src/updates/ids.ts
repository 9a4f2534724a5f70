// Event ids derived from the update itself, so a redelivered update yields the same ids and the service stores it
// once. UUIDv5 (RFC 9562, SHA-1 of a namespace and a name), computed here in plain JavaScript: synchronous (the
// middleware must not await) and the same in Node.js, Deno, Bun and edge runtimes, where the frameworks also run.

/** The namespace of tg-ingest's update ids (itself a UUIDv5 of "tg-ingest/updates" in the URL namespace). */
export const UPDATE_NAMESPACE = 'e84634ad-9023-52e1-bbf0-18df1238b3c6';

const encoder = new TextEncoder();
const namespaces = new Map<string, Uint8Array>();

/** The UUIDv5 of `name` in `namespace`. */
export function uuidv5(name: string, namespace: string = UPDATE_NAMESPACE): string {
  let ns = namespaces.get(namespace);
  if (ns === undefined) {
    ns = uuidBytes(namespace);
    if (namespaces.size < 16) namespaces.set(namespace, ns);
  }
  const text = encoder.encode(name);
  const input = new Uint8Array(16 + text.length);
  input.set(ns, 0);
  input.set(text, 16);
  const b = sha1(input);
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  let out = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += '-';
    out += HEX[b[i]!];
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * The namespace of one deployment's update ids, from a secret only the bot's backend holds (its tg-ingest token by
 * default). Ids from public inputs alone (bot id, update id) could be computed by anyone who can post events to the
 * project, say through its mini-app, and stored first to make the bot's real events look like redeliveries.
 */
export function updateNamespace(secret: string): string {
  return uuidv5(`secret:${secret}`, UPDATE_NAMESPACE);
}

/**
 * The id of the `index`-th event of an update. Bot id and update id together name the update (update ids count per
 * bot); `name` tells apart the bot's own events (ctx.track), whose order a redelivery may change.
 */
export function updateEventId(
  namespace: string,
  messengerBotId: number,
  updateId: number,
  index: number,
  name?: string,
): string {
  return uuidv5(`${messengerBotId}:${updateId}:${index}${name === undefined ? '' : `:${name}`}`, namespace);
}

function uuidBytes(uuid: string): Uint8Array {
  const hex = uuid.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new TypeError(`not a UUID: ${uuid}`);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Reused across calls: hashing is synchronous, so one schedule array serves every call. */
const W = new Uint32Array(80);

/** SHA-1 (FIPS 180-4). Not for security here: UUIDv5 is defined over it. */
export function sha1(data: Uint8Array): Uint8Array {
  const bitLength = data.length * 8;
  const padded = new Uint8Array((((data.length + 8) >> 6) + 1) << 6);
  padded.set(data);
  padded[data.length] = 0x80;
  const end = padded.length;
  const high = Math.floor(bitLength / 2 ** 32);
  const low = bitLength >>> 0;
  padded[end - 8] = high >>> 24;
  padded[end - 7] = (high >>> 16) & 0xff;
  padded[end - 6] = (high >>> 8) & 0xff;
  padded[end - 5] = high & 0xff;
  padded[end - 4] = low >>> 24;
  padded[end - 3] = (low >>> 16) & 0xff;
  padded[end - 2] = (low >>> 8) & 0xff;
  padded[end - 1] = low & 0xff;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89;
  let h2 = 0x98badcfe;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0;
  const w = W;
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + i * 4;
      w[i] = (padded[j]! << 24) | (padded[j + 1]! << 16) | (padded[j + 2]! << 8) | padded[j + 3]!;
    }
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!;
      w[i] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    for (let i = 0; i < 80; i++) {
      let f: number;
      let k: number;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const t = (((a << 5) | (a >>> 27)) + f + e + k + w[i]!) >>> 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    h0 = (h0 + a) >>> 0;
    h1 = (h1 + b) >>> 0;
    h2 = (h2 + c) >>> 0;
    h3 = (h3 + d) >>> 0;
    h4 = (h4 + e) >>> 0;
  }
  const out = new Uint8Array(20);
  const hs = [h0, h1, h2, h3, h4];
  for (let i = 0; i < 5; i++) {
    const h = hs[i]!;
    out[i * 4] = h >>> 24;
    out[i * 4 + 1] = (h >>> 16) & 0xff;
    out[i * 4 + 2] = (h >>> 8) & 0xff;
    out[i * 4 + 3] = h & 0xff;
  }
  return out;
}
