// A development key for initData: with the embedded database (a developer's machine) the service makes an Ed25519
// key pair in DATA_DIR and trusts it beside the messenger's keys, and `npm run admin -- initdata` signs with it, so
// the webapp endpoint can be tried without the messenger. Never made with DATABASE_URL unless
// INITDATA_DEV_KEY_FILE asks for it.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { constants, existsSync, lstatSync, mkdirSync, openSync, readFileSync, closeSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface DevKey {
  path: string;
  publicKeyHex: string;
  privateKey: KeyObject;
  created: boolean;
}

/**
 * Reads the key in `path`, making it first (PKCS#8 PEM, mode 0600, in a 0700 directory when that is new) when
 * `create` and it is missing. A key it did not make must be a regular file of this user that nobody else can read:
 * a symlink, another owner or a readable mode is refused, since whoever can write the file can sign as any user.
 */
export function loadDevKey(path: string, create: boolean): DevKey | null {
  let created = false;
  if (!existsSync(path)) {
    if (!create) return null;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(path, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' });
    created = true;
  }
  const st = lstatSync(path);
  if (!st.isFile()) throw new Error(`${path} is not a regular file (a symlink?); the development key must be one`);
  if ((st.mode & 0o077) !== 0)
    throw new Error(`${path} is readable by others: chmod 600 it, or delete it to make a new one`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new Error(`${path} belongs to another user (uid ${st.uid})`);
  // O_NOFOLLOW: a symlink put there since the check is refused, not followed.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  let pem: string;
  try {
    pem = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  const privateKey = createPrivateKey(pem);
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
    // The id's digits as they are: Number() would round one past 2^53.
    user: `{"id":${/^[1-9][0-9]{0,18}$/.test(s.userId) ? s.userId : '0'},"first_name":"Dev","username":"dev_${s.userId.replace(/\D/g, '')}","language_code":"en"}`,
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
