// The address a per-client limit is keyed by. Behind a trusted proxy (TRUST_PROXY=1) it is the
// address the proxy appended to X-Forwarded-For: the last entry, the only one a client cannot forge.
// An IPv4 address written as IPv6 (::ffff:a.b.c.d, as a dual-stack listener reports IPv4 clients,
// and the other ways IPv6 carries one) is the IPv4 address.
import { isIP } from 'node:net';

export function clientAddress(peer: string, forwardedFor: string | undefined, trustProxy: boolean): string {
  if (trustProxy && forwardedFor !== undefined) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim();
    if (isIP(last) !== 0) return canonical(last);
  }
  return canonical(peer);
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

/**
 * The IPv4 address an IPv6 address carries in its last 32 bits, or null: IPv4-mapped (::ffff:0:0/96), IPv4-translated
 * (::ffff:0:0:0/96), the NAT64 well-known prefix (64:ff9b::/96) and the old IPv4-compatible form (::/96, but :: and
 * ::1).
 */
function embeddedIPv4(g: number[]): string | null {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const carries =
    (zeros(0, 5) && g[5] === 0xffff) ||
    (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) ||
    (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) ||
    (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1));
  return carries ? `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}` : null;
}

/** An IPv4 address carried in IPv6 as the IPv4 address; anything else as it was given. */
export function canonical(address: string): string {
  // Every request passes here: an IPv4 address (no colon) is known without parsing.
  if (!address.includes(':') || isIP(address) !== 6) return address;
  return embeddedIPv4(groups(address)) ?? address;
}

/**
 * The /64 an IPv6 client's address belongs to, or null (IPv4, or IPv4 carried in IPv6): one subscriber is handed a /64
 * at least, and could take a fresh budget from every address of it, so failure budgets also count the /64 as a whole.
 */
export function prefix64(address: string): string | null {
  if (!address.includes(':') || isIP(address) !== 6) return null;
  const g = groups(address);
  if (embeddedIPv4(g) !== null) return null;
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}
