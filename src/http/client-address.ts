// The address a per-client limit is keyed by. Behind a trusted proxy (TRUST_PROXY=1) it is the
// address the proxy appended to X-Forwarded-For: the last entry, the only one a client cannot forge.
// An IPv6 client is keyed by its /64: one subscriber is handed at least that much, and could
// otherwise take a fresh budget with every address of it. An IPv4 address written as IPv6
// (::ffff:a.b.c.d, as a dual-stack listener reports IPv4 clients) is keyed as the IPv4 address.
import { isIP } from 'node:net';

export function clientAddress(peer: string, forwardedFor: string | undefined, trustProxy: boolean): string {
  if (trustProxy && forwardedFor !== undefined) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim();
    if (isIP(last) !== 0) return limitKey(last);
  }
  return limitKey(peer);
}

/** The eight 16-bit groups of an IPv6 address that isIP() accepted (a zone index dropped). */
function groups(ip: string): number[] {
  let s = ip.toLowerCase();
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  // A trailing dotted quad is the last two groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const part = (p: string | undefined) => (p === undefined || p === '' ? [] : p.split(':').map((h) => parseInt(h, 16)));
  const front = part(head);
  const back = part(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** What a per-client limit counts under: an IPv4 address as it is, an IPv6 address's /64. */
export function limitKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const g = groups(address);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff)
    return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}
