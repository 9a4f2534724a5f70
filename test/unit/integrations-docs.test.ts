// The integrations' READMEs against the shared tables (integrations/MAPPING.md): the framework packages show the
// update table, which names every update type the client maps and only tg.* fields the service promotes; the
// mini-app SDK shows the table of what it captures, which names every event it sends and nothing else. And
// `npm pack` of each package holds only what it needs.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UPDATE_TYPES } from '../../client/src/updates/mapping.js';
import { capturedNames } from '../../integrations/webapp/src/capture.js';
import { TG_REGISTRY } from '../../src/pipeline/registry.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const tables = readFileSync(`${ROOT}integrations/MAPPING.md`, 'utf8');
/** A section's text, from the line after its heading to the next heading. */
const section = (heading: string) => {
  const start = tables.indexOf(`## ${heading}`);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = tables.slice(tables.indexOf('\n', start) + 1);
  const end = body.indexOf('\n## ');
  return (end < 0 ? body : body.slice(0, end)).trim();
};
const mapping = section('Bot updates');

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

describe('the table of what the mini-app SDK captures', () => {
  const captured = section('Mini-app events');

  it("is in @tg-ingest/webapp's README as written once in integrations/MAPPING.md", () => {
    expect(readFileSync(`${ROOT}integrations/webapp/README.md`, 'utf8')).toContain(captured);
  });

  it('names every event the SDK sends, and no other', () => {
    const names = captured
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| what') && !l.startsWith('|---'))
      .flatMap((l) => [...l.split(' | ')[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
    expect(names.sort()).toEqual(capturedNames().sort());
  });
});

describe('npm pack of the integrations', () => {
  it('@tg-ingest/webapp holds its build (the modules and the one-file script), README and package.json, and depends on the client only', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: `${ROOT}integrations/webapp`,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [packed] = JSON.parse(out) as { files: { path: string }[] }[];
    const files = packed!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/webapp.min.js']));
    expect(files.filter((f) => !/^(README\.md|package\.json|dist\/[a-z.]+\.(js|d\.ts))$/.test(f))).toEqual([]);
    const manifest = JSON.parse(readFileSync(`${ROOT}integrations/webapp/package.json`, 'utf8'));
    expect(Object.keys(manifest.dependencies)).toEqual(['@tg-ingest/client']);
    expect(manifest.peerDependencies).toBeUndefined();
  });

  it("@tg-ingest/webapp's one-file script carries the webapp client alone, not the bot_api one a page never uses", () => {
    const script = readFileSync(`${ROOT}integrations/webapp/dist/webapp.min.js`, 'utf8');
    expect(script).toContain('/tg/webapp');
    for (const botApiOnly of ['setProfile', 'messengerUserId', 'event_invalid'])
      expect(script).not.toContain(botApiOnly);
  });

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
