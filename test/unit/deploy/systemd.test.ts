// The systemd unit in deploy/ as systemd reads it, and the environment file it reads: every setting one the service
// knows.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const read = (f: string) => readFileSync(new URL(`../../../${f}`, import.meta.url), 'utf8');
const unit = new URL('../../../deploy/tg-ingest.service', import.meta.url);

describe('deploy/tg-ingest.service', () => {
  it('passes systemd-analyze verify without a warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-unit-'));
    try {
      copyFileSync(unit, join(dir, 'tg-ingest.service'));
      const r = spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, 'tg-ingest.service')], {
        encoding: 'utf8',
      });
      expect(r.error).toBeUndefined();
      expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({ status: 0, stderr: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads deploy/tg-ingest.env, and sets only variables the service reads', () => {
    const text = read('deploy/tg-ingest.service');
    expect(text).toMatch(/^EnvironmentFile=\/etc\/tg-ingest\/tg-ingest\.env$/m);
    const config = read('src/config/config.ts');
    const names = [
      ...[...read('deploy/tg-ingest.env').matchAll(/^#?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/^Environment=([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!),
    ];
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !config.includes(`'${n}'`))).toEqual([]);
  });
});
