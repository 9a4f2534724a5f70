// A flood, run as a process of its own so that it competes with the service, not with the load
// generator of the valid traffic it is measured against. Prints one JSON line.
// usage: node flood-driver.js URL KIND CONNECTIONS SECONDS BOT_ID [ADDRESSES]
//   forged-initdata  fresh initData with a random signature: each costs a verification unless refused first
//   unknown-token    well-formed made-up API keys: each costs a lookup unless refused first
//   gzip-envelope    999 bytes of gzip that inflate to ~960 KB whose envelope names no bot
// ADDRESSES: how many client addresses it speaks for through X-Forwarded-For (256: a small botnet; 1: one host).
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import autocannon from 'autocannon';

const KINDS = ['forged-initdata', 'unknown-token', 'gzip-envelope'] as const;
const [url, kind, connections, seconds, botId, addressCount = '256'] = process.argv.slice(2);
if (url === undefined || !KINDS.includes(kind as (typeof KINDS)[number]))
  throw new Error(`usage: flood-driver URL ${KINDS.join('|')} CONNECTIONS SECONDS BOT_ID [ADDRESSES]`);

const addresses = Array.from({ length: Number(addressCount) }, (_, i) =>
  Number(addressCount) === 1 ? '192.0.2.10' : `198.51.${100 + (i >> 8)}.${i & 255}`,
);
let n = 0;
const address = () => addresses[n++ % addresses.length]!;

/** initData that parses and is fresh but carries a random signature. */
function forgedBody(): string {
  const user = encodeURIComponent(JSON.stringify({ id: 100_000 + (n % 5000), first_name: 'Mallory' }));
  const initData = `query_id=AAH${randomBytes(6).toString('hex')}&user=${user}&auth_date=${Math.floor(Date.now() / 1000)}&signature=${randomBytes(64).toString('base64url')}&hash=${randomBytes(32).toString('hex')}`;
  return JSON.stringify({
    botId,
    auth: { initData },
    events: [
      {
        eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
        eventName: 'x',
        eventDate: '2026-11-22T10:00:00Z',
        eventType: 'platform',
      },
    ],
  });
}
const tokenBody = JSON.stringify({
  events: [
    {
      eventId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
      eventName: 'x',
      eventDate: '2026-11-22T10:00:00Z',
      eventType: 'platform',
      eventOrigin: 'custom',
      platformUserId: '1',
    },
  ],
});
// {"botId":"not-a-bot","pad":[1,1,…]}: 999 bytes that inflate to ~960 KB.
const bomb = gzipSync(`{"botId":"not-a-bot","pad":[${'1,'.repeat(479_990)}1]}`, { level: 9 });

const statuses: Record<string, number> = {};
const setup: Record<(typeof KINDS)[number], (req: Record<string, unknown>) => Record<string, unknown>> = {
  'forged-initdata': (req) => ({
    ...req,
    path: '/tg/webapp',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address() },
    body: forgedBody(),
  }),
  'unknown-token': (req) => ({
    ...req,
    path: '/tg',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': address(),
      'x-api-key': `tgk_${randomBytes(32).toString('base64url')}`,
    },
    body: tokenBody,
  }),
  'gzip-envelope': (req) => ({
    ...req,
    path: '/tg/webapp',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-forwarded-for': address() },
    body: bomb,
  }),
};
const r = (await autocannon({
  url,
  method: 'POST',
  connections: Number(connections),
  duration: Number(seconds),
  timeout: 30,
  requests: [
    {
      setupRequest: setup[kind as (typeof KINDS)[number]],
      onResponse: (status: number) => {
        statuses[status] = (statuses[status] ?? 0) + 1;
      },
    },
  ],
} as never)) as unknown as { requests: { average: number }; duration: number };
const total = Object.values(statuses).reduce((a, b) => a + b, 0);
process.stdout.write(
  `${JSON.stringify({ rps: total / (r.duration || Number(seconds)), statuses, bombBytes: bomb.length })}\n`,
);
