// The address a per-client limit is keyed by. Behind a trusted proxy (TRUST_PROXY=1) it is the
// address the proxy appended to X-Forwarded-For: the last entry, the only one a client cannot forge.
import { isIP } from 'node:net';

export function clientAddress(peer: string, forwardedFor: string | undefined, trustProxy: boolean): string {
  if (trustProxy && forwardedFor !== undefined) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim();
    if (isIP(last) !== 0) return last;
  }
  return peer;
}
