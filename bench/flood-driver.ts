// A credential flood, run as a process of its own so that it competes with the service, not with
// the load generator of the valid traffic it is measured against. Prints one JSON line.
// usage: node flood-driver.js URL forged-initdata|unknown-token CONNECTIONS SECONDS BOT_ID
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';

const [url, kind, connections, seconds, botId] = process.argv.slice(2);
if (url === undefined || (kind !== 'forged-initdata' && kind !== 'unknown-token')) throw new Error('usage: flood-driver URL forged-initdata|unknown-token CONNECTIONS SECONDS BOT_ID');

// A small botnet: 256 addresses, each seen by the service through X-Forwarded-For (TRUST_PROXY=1).
const addresses = Array.from({ length: 256 }, (_, i) => `198.51.${100 + (i >> 8)}.${i & 255}`);
let n = 0;
const address = () => addresses[n++ % addresses.length]!;

/** initData that parses and is fresh but carries a random signature: each costs a verification if not refused first. */
function forgedBody(): string {
  const user = encodeURIComponent(JSON.stringify({ id: 100_000 + (n % 5000), first_name: 'Mallory' }));
  const initData = `query_id=AAH${randomBytes(6).toString('hex')}&user=${user}&auth_date=${Math.floor(Date.now() / 1000)}&signature=${randomBytes(64).toString('base64url')}&hash=${randomBytes(32).toString('hex')}`;
  return JSON.stringify({ botId, auth: { initData }, events: [{ eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b', eventName: 'x', eventDate: '2026-11-22T10:00:00Z', eventType: 'platform' }] });
}
const tokenBody = JSON.stringify({ events: [{ eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b', eventName: 'x', eventDate: '2026-11-22T10:00:00Z', eventType: 'platform', eventOrigin: 'custom', platformUserId: '1' }] });

const statuses: Record<string, number> = {};
const r = (await autocannon({
  url: `${url}${kind === 'forged-initdata' ? '/tg/webapp' : '/tg'}`,
  method: 'POST',
  connections: Number(connections),
  duration: Number(seconds),
  timeout: 30,
  requests: [{
    setupRequest: (req: Record<string, unknown>) => kind === 'forged-initdata'
      ? { ...req, headers: { 'content-type': 'application/json', 'x-forwarded-for': address() }, body: forgedBody() }
      : { ...req, headers: { 'content-type': 'application/json', 'x-forwarded-for': address(), 'x-api-key': `tgk_${randomBytes(32).toString('base64url')}` }, body: tokenBody },
    onResponse: (status: number) => {
      statuses[status] = (statuses[status] ?? 0) + 1;
    },
  }],
} as never)) as unknown as { requests: { average: number }; duration: number };
const total = Object.values(statuses).reduce((a, b) => a + b, 0);
process.stdout.write(`${JSON.stringify({ rps: total / (r.duration || Number(seconds)), statuses })}\n`);
