// initData signed with a key pair made here, as the messenger's mini-app SDK hands it to a client.
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

export interface Signer {
  publicKeyHex: string;
  sign(message: string): string;
}

export function newSigner(): Signer {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x!;
  return {
    publicKeyHex: Buffer.from(x, 'base64url').toString('hex'),
    sign: (message) => sign(null, Buffer.from(message), privateKey as KeyObject).toString('base64url'),
  };
}

export interface InitDataOptions {
  messengerBotId: number | string;
  user?: Record<string, unknown>;
  /** The user field exactly as the messenger serializes it (keeps escapes such as \/). */
  userJson?: string;
  authDate?: number;
  extra?: Record<string, string>;
  /** Change a field after signing. */
  tamper?: Record<string, string>;
  omit?: string[];
  signature?: string;
}

export function makeInitData(signer: Signer, o: InitDataOptions): string {
  const userJson =
    o.userJson ??
    JSON.stringify(
      o.user ?? {
        id: 424242,
        first_name: 'Ada',
        last_name: 'L',
        username: 'ada',
        language_code: 'en',
        is_premium: true,
      },
    );
  const fields: Record<string, string> = {
    query_id: `AAH${randomBytes(8).toString('hex')}`,
    user: userJson,
    auth_date: String(o.authDate ?? Math.floor(Date.now() / 1000)),
    chat_instance: '-4242424242',
    chat_type: 'sender',
    ...o.extra,
  };
  const check = Object.keys(fields)
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join('\n');
  const signature = o.signature ?? signer.sign(`${o.messengerBotId}:WebAppData\n${check}`);
  const all: Record<string, string> = { ...fields, ...o.tamper, hash: randomBytes(32).toString('hex'), signature };
  for (const k of o.omit ?? []) delete all[k];
  return Object.entries(all)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
}
