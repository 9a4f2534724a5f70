// initData checks per second on one core: node:crypto vs @noble/ed25519, uncached (parse, build
// the data-check-string, verify) and cached (the LRU lookup a session's later batches pay).
import { createHash, hash } from 'node:crypto';
import * as noble from '@noble/ed25519';
import { LRUCache } from 'lru-cache';
import { verifySignature } from '../src/worker/ed25519.js';
import { dataCheckString, parseInitData } from '../src/auth/initdata.js';
import { makeInitData, newSigner } from './lib/initdata.js';
import type { Row } from './lib/report.js';

noble.hashes.sha512 = (m: Uint8Array) => new Uint8Array(createHash('sha512').update(m).digest());

function rate(seconds: number, fn: () => void): number {
  for (let i = 0; i < 50; i++) fn();
  let n = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) fn();
    n += 20;
  }
  return n / ((performance.now() - started) / 1000);
}

export function ed25519Bench(seconds = 1.5): {
  rows: Row[];
  nodeUncached: number;
  nobleUncached: number;
  cached: number;
} {
  const signer = newSigner();
  const botId = '4242';
  const strings = Array.from({ length: 256 }, (_, i) =>
    makeInitData(signer, { messengerBotId: botId, user: { id: 1000 + i, first_name: 'A' } }),
  );
  const pub = Buffer.from(signer.publicKeyHex, 'hex');
  let k = 0;
  const check = (verify: (msg: string, sig: string) => boolean) => () => {
    const parsed = parseInitData(strings[k++ % strings.length]!);
    if (!parsed.ok || !verify(dataCheckString(botId, parsed.data.fields), parsed.data.signature))
      throw new Error('verification failed');
  };
  const nodeUncached = rate(
    seconds,
    check((m, s) => verifySignature(m, s, [signer.publicKeyHex])),
  );
  const nobleUncached = rate(
    seconds,
    check((m, s) => noble.verify(Buffer.from(s, 'base64url'), Buffer.from(m), pub)),
  );
  const cache = new LRUCache<string, { ok: true }>({ max: 1000 });
  for (const s of strings) cache.set(hash('sha256', `bot\n${botId}\n${s}`, 'base64'), { ok: true });
  const cached = rate(seconds, () => {
    if (cache.get(hash('sha256', `bot\n${botId}\n${strings[k++ % strings.length]}`, 'base64')) === undefined)
      throw new Error('miss');
  });
  return {
    nodeUncached,
    nobleUncached,
    cached,
    rows: [
      {
        implementation: 'node:crypto',
        path: 'uncached: parse + verify',
        'checks/s/core': nodeUncached,
        'µs/check': 1e6 / nodeUncached,
      },
      {
        implementation: '@noble/ed25519 3 (sync)',
        path: 'uncached: parse + verify',
        'checks/s/core': nobleUncached,
        'µs/check': 1e6 / nobleUncached,
      },
      {
        implementation: 'either',
        path: 'cached: SHA-256 + LRU lookup',
        'checks/s/core': cached,
        'µs/check': 1e6 / cached,
      },
    ],
  };
}
