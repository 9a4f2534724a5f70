// The shape of src/: imports only go down,
//   app → wings → openapi → {http, admin} → metrics → ingest → {auth, limits, quality, reports, privacy, sdk, worker}
//   → lake → {pipeline, cache} → writer → db.
// A module may import its own folder, anything below its layer, and what every layer uses: base/ (errors, the
// model's types, endpoints, the logger, the main thread's turns, a background job's schedule) and config/. Handlers of the HTTP front
// (ingest/, admin/) may import its handler contract as types. A wing (src/wings/<feature>/) imports the shared layers
// and wings/wing.ts, never another wing.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const LAYERS: Record<string, number> = {
  app: -3,
  wings: -2,
  openapi: -1,
  http: 0,
  admin: 0,
  metrics: 0.5,
  ingest: 1,
  auth: 2,
  limits: 2,
  quality: 2,
  reports: 2,
  lake: 2.5,
  privacy: 2,
  sdk: 2,
  worker: 2,
  pipeline: 3,
  cache: 3,
  writer: 4,
  db: 5,
};
/** Folders any layer may import: they import nothing of src/ beyond each other. */
const LEAVES = new Set(['base', 'config']);
/** Files at the top of src/: the entry point, which composes everything and is imported by nothing. */
const ROOTS = new Set(['main.ts']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) =>
    statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : [],
  );
}

const place = (file: string) => {
  const rel = relative(SRC, file);
  const folder = rel.includes('/') ? rel.split('/')[0]! : null;
  return { rel, folder, top: folder === null ? rel : null };
};

describe('src/ layout', () => {
  it('every file sits in a folder of a known layer or of what every layer uses, or is the entry point', () => {
    const stray = files(SRC)
      .map(place)
      .filter((p) => (p.folder === null ? !ROOTS.has(p.top!) : !(p.folder in LAYERS) && !LEAVES.has(p.folder)));
    expect(stray.map((p) => p.rel)).toEqual([]);
  });

  it('imports only go down', () => {
    const wrong: string[] = [];
    for (const file of files(SRC)) {
      const from = place(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^import (type )?[^'"]*from '(\.[^']+)'/gm)) {
        const target = place(join(dirname(file), m[2]!.replace(/\.js$/, '.ts')));
        const typeOnly = m[1] !== undefined;
        if (from.folder === 'wings' && target.folder === 'wings') {
          const wing = (rel: string) => rel.split('/')[1]!;
          if (wing(from.rel) !== wing(target.rel) && target.rel !== 'wings/wing.ts')
            wrong.push(`${from.rel} → ${target.rel} (another wing)`);
          continue;
        }
        if (target.folder === from.folder) continue;
        if (from.folder !== null && LEAVES.has(from.folder)) {
          if (target.folder === null || !LEAVES.has(target.folder))
            wrong.push(`${from.rel} → ${target.rel} (a leaf imports)`);
          continue;
        }
        if (target.folder !== null && LEAVES.has(target.folder)) continue;
        // The composition (main.ts, app/) may use anything.
        if ((from.top !== null && ROOTS.has(from.top)) || from.folder === 'app') continue;
        if (target.top !== null && ROOTS.has(target.top)) {
          wrong.push(`${from.rel} → ${target.rel} (a root)`);
          continue;
        }
        if (typeOnly && target.rel === 'http/server.ts' && (from.folder === 'ingest' || from.folder === 'admin'))
          continue;
        const a = LAYERS[from.folder!]!;
        const b = LAYERS[target.folder!]!;
        if (b <= a) wrong.push(`${from.rel} → ${target.rel}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the admin page: its modules import one another without a cycle, and only admin.js does anything at import', () => {
    const dir = join(SRC, 'admin', 'page');
    const modules = readdirSync(dir).filter((n) => n.endsWith('.js') && n !== 'uplot.js');
    const imports = new Map(
      modules.map((m) => [
        m,
        [...readFileSync(join(dir, m), 'utf8').matchAll(/^(?:import|export) [^'"]*from '\.\/([a-z-]+\.js)'/gm)]
          .map((i) => i[1]!)
          .filter((t) => t !== 'uplot.js'),
      ]),
    );
    // Depth-first: a module met again while its own imports are being walked closes a cycle.
    const cycles: string[] = [];
    const state = new Map<string, 'walking' | 'done'>();
    const walk = (m: string, path: string[]) => {
      if (state.get(m) === 'done') return;
      if (state.get(m) === 'walking') return void cycles.push([...path.slice(path.indexOf(m)), m].join(' → '));
      state.set(m, 'walking');
      for (const t of imports.get(m) ?? []) walk(t, [...path, m]);
      state.set(m, 'done');
    };
    for (const m of modules) walk(m, []);
    expect(cycles).toEqual([]);
    // What runs at import is what stands outside every function: no statement of its own there, and no call in a
    // declaration's value but of pure helpers (no listener, timer, request, hook or drawing).
    const PURE = new Set(['latestOnly', 'emptyQuarantine', 'emptyWatch', 'Set', 'Map', 'supportedValuesOf']);
    const actsAtImport = (file: string) => {
      const source = ts.createSourceFile(file, readFileSync(join(dir, file), 'utf8'), ts.ScriptTarget.Latest);
      let acts = false;
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) || ts.isClassLike(node)) return;
        if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
          const callee = node.expression;
          const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText(source);
          if (!PURE.has(name)) acts = true;
        }
        ts.forEachChild(node, visit);
      };
      for (const statement of source.statements) {
        if (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) continue;
        if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) continue;
        if (ts.isVariableStatement(statement)) visit(statement);
        else acts = true;
      }
      return acts;
    };
    const eager = modules.filter((m) => m !== 'admin.js' && actsAtImport(m));
    expect(eager).toEqual([]);
  });
});
