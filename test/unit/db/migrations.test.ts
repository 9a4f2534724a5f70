// Each migration keeps its identity and order: the file named for version N holds version N, and the list applies
// every file, oldest first.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';

const DIR = new URL('../../../src/db/migrations/', import.meta.url);

describe('migrations', () => {
  it('are listed once each, oldest first, each in the file named for its version', async () => {
    const files = readdirSync(DIR).filter((f) => /^\d{3}-[a-z0-9-]+\.ts$/.test(f));
    expect(MIGRATIONS.map((m) => m.version)).toEqual(files.map((_, i) => i + 1));
    for (const f of files) {
      const { migration } = (await import(new URL(f.replace(/\.ts$/, '.js'), DIR).href)) as {
        migration: { version: number };
      };
      expect(migration.version, f).toBe(Number(f.slice(0, 3)));
      expect(MIGRATIONS[migration.version - 1]).toBe(migration);
    }
  });
});
