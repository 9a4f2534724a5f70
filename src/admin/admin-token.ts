// The admin token: ADMIN_TOKEN when set, otherwise one generated on first start and kept in
// DATA_DIR/admin-token (mode 0600). Compared in constant time.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin-token');
}

export function loadAdminToken(
  configured: string | null,
  dataDir: string,
): { token: string; path: string | null; created: boolean } {
  if (configured !== null) return { token: configured, path: null, created: false };
  const path = adminTokenPath(dataDir);
  if (existsSync(path)) {
    chmodSync(path, 0o600);
    return { token: readFileSync(path, 'utf8').trim(), path, created: false };
  }
  mkdirSync(dataDir, { recursive: true });
  const token = `tga_${randomBytes(32).toString('base64url')}`;
  writeFileSync(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return { token, path, created: true };
}

/** Digests first, so neither length nor content of a wrong token shows in the timing. */
export function adminTokenMatches(expected: string, authorization: string | undefined): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  const given = m?.[1] ?? '';
  const a = hash('sha256', expected, 'buffer');
  const b = hash('sha256', given, 'buffer');
  return timingSafeEqual(a, b) && given !== '';
}
