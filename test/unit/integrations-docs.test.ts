// The framework packages' READMEs against the shared update table: both show the same mapping, which names every
// update type the table maps and only tg.* fields the service promotes; and `npm pack` of each package holds only
// what it needs.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UPDATE_TYPES } from '../../client/src/updates/mapping.js';
import { TG_REGISTRY } from '../../src/pipeline/registry.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const mapping = readFileSync(`${ROOT}integrations/MAPPING.md`, 'utf8');

describe('the mapping table of the framework packages', () => {
  for (const pkg of ['grammy', 'telegraf']) {
    it(`is in @tg-ingest/${pkg}'s README as written once in integrations/MAPPING.md`, () => {
      expect(readFileSync(`${ROOT}integrations/${pkg}/README.md`, 'utf8')).toContain(mapping);
    });
  }

  it('names every update type the shared table maps', () => {
    const firstCells = mapping
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split(' | ')[0]!);
    const named = new Set(firstCells.flatMap((c) => [...c.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!)));
    expect(Object.keys(UPDATE_TYPES).filter((t) => !named.has(t))).toEqual([]);
  });

  it('lists only fields of the service registry (besides the update types and values it names)', () => {
    const fieldCells = mapping
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split(' | ')[3]!);
    const fields = fieldCells.flatMap((c) => [...c.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
    expect(fields.filter((f) => !(f in TG_REGISTRY) && !['message', 'edited_message', 'removed'].includes(f))).toEqual(
      [],
    );
  });
});

describe('npm pack of the framework packages', () => {
  for (const pkg of ['grammy', 'telegraf']) {
    it(`@tg-ingest/${pkg} holds its build, README and package.json, and depends on the client and its framework only`, () => {
      const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: `${ROOT}integrations/${pkg}`,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const [packed] = JSON.parse(out) as { files: { path: string }[] }[];
      expect(packed!.files.map((f) => f.path).sort()).toEqual([
        'README.md',
        'dist/index.d.ts',
        'dist/index.js',
        'package.json',
      ]);
      const manifest = JSON.parse(readFileSync(`${ROOT}integrations/${pkg}/package.json`, 'utf8'));
      expect(Object.keys(manifest.dependencies)).toEqual(['@tg-ingest/client']);
      expect(Object.keys(manifest.peerDependencies)).toEqual([pkg]);
      expect(manifest.devDependencies).toBeUndefined();
    });
  }
});
