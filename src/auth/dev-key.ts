// A development key for initData: with the embedded database (a developer's machine) the service makes an Ed25519
// key pair in DATA_DIR and trusts it beside the messenger's keys, and `npm run admin -- initdata` signs with it, so
// the webapp endpoint can be tried without the messenger. Never made with DATABASE_URL unless
// INITDATA_DEV_KEY_FILE asks for it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface DevKey {
  path: string;
  publicKeyHex: string;
  privateKey: KeyObject;
  created: boolean;
}

/** Reads the key in `path`, making it first (PKCS#8 PEM, mode 0600) when `create` and it is missing. */
export function loadDevKey(path: string, create: boolean): DevKey | null {
  let created = false;
  if (!existsSync(path)) {
    if (!create) return null;
    mkdirSync(dirname(path), { recursive: true });
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(path, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' });
    created = true;
  }
  chmodSync(path, 0o600);
  const privateKey = createPrivateKey(readFileSync(path, 'utf8'));
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`${path} does not hold an Ed25519 private key`);
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!;
  return { path, publicKeyHex: Buffer.from(x, 'base64url').toString('hex'), privateKey, created };
}

export interface SignedSession {
  messengerBotId: string;
  userId: string;
  startParam?: string;
  /** Seconds since 1970; default now. */
  authDate?: number;
}

/** initData as the mini-app SDK hands it over, signed the messenger's third-party way (docs/api.md). */
export function signInitData(key: KeyObject, s: SignedSession): string {
  const fields: Record<string, string> = {
    query_id: `AAH${randomBytes(8).toString('hex')}`,
    user: JSON.stringify({ id: Number(s.userId), first_name: 'Dev', username: `dev_${s.userId}`, language_code: 'en' }),
    auth_date: String(s.authDate ?? Math.floor(Date.now() / 1000)),
    chat_type: 'sender',
    ...(s.startParam === undefined ? {} : { start_param: s.startParam }),
  };
  const check = Object.keys(fields)
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join('\n');
  const signature = sign(null, Buffer.from(`${s.messengerBotId}:WebAppData\n${check}`), key).toString('base64url');
  return Object.entries({ ...fields, signature })
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
}
