// The development initData key: made private, refused when anyone else could have written or read it, and the
// initData it signs is what the service verifies.
import { verify } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadDevKey, signInitData } from '../../../src/auth/dev-key.js';
import { parseInitData } from '../../../src/auth/initdata.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tg-dev-key-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the development initData key', () => {
  it('is made once, mode 0600 in a 0700 directory, and read back the same', () => {
    const path = join(temp(), 'new', 'dev.pem');
    expect(loadDevKey(path, false)).toBeNull();
    const made = loadDevKey(path, true)!;
    expect(made.created).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700);
    const again = loadDevKey(path, true)!;
    expect([again.created, again.publicKeyHex]).toEqual([false, made.publicKeyHex]);
  });

  it('is refused when others can read it, or when it is a symlink', () => {
    const dir = temp();
    const path = join(dir, 'dev.pem');
    loadDevKey(path, true);
    chmodSync(path, 0o644);
    expect(() => loadDevKey(path, true)).toThrow(/readable by others/);
    chmodSync(path, 0o600);
    const link = join(dir, 'link.pem');
    symlinkSync(path, link);
    expect(() => loadDevKey(link, true)).toThrow(/not a regular file/);
  });

  it('signs initData the service parses, for the exact user id and start parameter', () => {
    const key = loadDevKey(join(temp(), 'dev.pem'), true)!;
    const initData = signInitData(key.privateKey, {
      messengerBotId: '123',
      userId: '9007199254740991',
      startParam: 'spring',
    });
    const parsed = parseInitData(initData);
    if (!parsed.ok) throw new Error(parsed.code);
    expect(parsed.data.user.id).toBe('9007199254740991');
    const signature = Buffer.from(parsed.data.signature, 'base64url');
    const message = Buffer.from(`123:WebAppData\n${parsed.data.fields}`);
    const publicKey = {
      key: Buffer.from(`302a300506032b6570032100${key.publicKeyHex}`, 'hex'),
      format: 'der',
      type: 'spki',
    } as const;
    expect(verify(null, message, publicKey, signature)).toBe(true);
    expect(parsed.data.fields).toContain('start_param=spring');
  });
});
