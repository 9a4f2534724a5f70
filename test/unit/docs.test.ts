// The documentation against the code: the tables of docs/api.md and README.md are parsed and compared
// with the tables they describe, in both directions, so that a code added, removed or changed on
// either side fails here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/base/errors.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { DIAGNOSTICS, PLAN_CODES } from '../../src/pipeline/diagnostics.js';
import { EVENT_TYPES } from '../../src/pipeline/event.js';
import { TG_REGISTRY } from '../../src/pipeline/registry.js';
import { FOLD_VERSION } from '../../src/reports/fold-sql.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const readme = read('README.md');
const api = read('docs/api.md');
const operations = read('docs/operations.md');

/**
 * The lines of the section under `heading` (a whole heading line), up to the next heading of the same or a higher
 * level.
 */
function section(doc: string, heading: string): string[] {
  const lines = doc.split('\n');
  const start = lines.indexOf(heading);
  if (start === -1) throw new Error(`no heading "${heading}"`);
  const level = heading.match(/^#+/)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && l.match(/^#+/)![0].length <= level);
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

/** Body rows of the markdown tables in `lines`, as trimmed cells (header and separator rows left out). */
function tableRows(lines: string[]): string[][] {
  const rows: string[][] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith('|')) continue;
    if (/^\|[\s:|-]+\|$/.test(line)) continue;
    if (lines[i + 1] !== undefined && /^\|[\s:|-]+\|$/.test(lines[i + 1]!)) continue;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** `code` → the cell after it, for rows whose first cell is one backticked code. */
function codeTable(lines: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [first, second] of tableRows(lines)) {
    const m = /^`([a-z0-9_]+)`$/.exec(first ?? '');
    if (m === null) throw new Error(`a row of the table does not start with one code: ${first}`);
    if (out.has(m[1]!)) throw new Error(`${m[1]} is listed twice`);
    out.set(m[1]!, second ?? '');
  }
  return out;
}

function compare(documented: Map<string, string>, code: Record<string, string>) {
  const missing = Object.keys(code).filter((k) => !documented.has(k));
  const unknown = [...documented.keys()].filter((k) => !(k in code));
  const wrong = Object.entries(code)
    .filter(([k, v]) => documented.has(k) && documented.get(k) !== v)
    .map(([k, v]) => `${k}: documented ${documented.get(k)}, code ${v}`);
  return { missing, unknown, wrong };
}

const clean = { missing: [], unknown: [], wrong: [] };

describe('docs/api.md', () => {
  it('lists every error code of src/base/errors.ts with its status, and no other', () => {
    const documented = codeTable(section(api, '## Error codes'));
    expect(documented.size).toBeGreaterThan(0);
    expect(
      compare(documented, Object.fromEntries(Object.entries(ERRORS).map(([c, e]) => [c, String(e.status)]))),
    ).toEqual(clean);
  });

  it('lists every diagnostic of src/pipeline/diagnostics.ts with its severity, and no other', () => {
    const documented = codeTable(section(api, '## Diagnostic codes'));
    expect(documented.size).toBeGreaterThan(0);
    // The codes of a tracking plan come with the severity the plan says (the table holds the stricter one).
    const severity = (c: string, s: string) =>
      PLAN_CODES.has(c as keyof typeof DIAGNOSTICS) ? 'warning or error (the plan decides)' : s;
    expect(PLAN_CODES.size).toBeGreaterThan(0);
    expect(
      compare(
        documented,
        Object.fromEntries(Object.entries(DIAGNOSTICS).map(([c, d]) => [c, severity(c, d.severity)])),
      ),
    ).toEqual(clean);
  });

  it('explains tracking plans, the quarantine and replay, with a worked example', () => {
    const quality = section(api, '## Tracking plans, the quarantine and replay').join('\n');
    for (const code of PLAN_CODES) expect(quality).toContain(`\`${code}\``);
    const example = section(api, '### Worked example (tracking plan)').join('\n');
    for (const route of ['/tracking-plan', '/quarantine', '/quarantine/replay', '"dryRun": true'])
      expect(example).toContain(route);
  });

  it('lists every field of the tg.* registry with its bucket, and no other', () => {
    const bucket = {
      string: '`propsString`',
      long: '`propsLong`',
      float: '`propsFloat`',
      bool: '`propsBool`',
    } as const;
    const documented = new Map<string, string>();
    for (const [first, second] of tableRows(section(api, '### The canonical tg.* registry'))) {
      const m = /^`tg\.([a-z0-9_]+)`$/.exec(first ?? '');
      if (m === null) throw new Error(`a row of the registry table does not start with a tg.* field: ${first}`);
      documented.set(m[1]!, second ?? '');
    }
    expect(documented.size).toBeGreaterThan(0);
    expect(
      compare(documented, Object.fromEntries(Object.entries(TG_REGISTRY).map(([f, t]) => [f, bucket[t]]))),
    ).toEqual(clean);
  });

  it('names the nine event types', () => {
    const listed =
      section(api, '### eventType')
        .join(' ')
        .match(/`[a-z]+`/g)
        ?.map((s) => s.slice(1, -1)) ?? [];
    expect(new Set(listed)).toEqual(new Set(EVENT_TYPES));
  });
});

describe("README.md's first event", () => {
  it('is dated now, so it shows in the reports the page and the CLI open on', () => {
    const first = section(readme, '## A first event').join('\n');
    expect(first).toContain(`"eventDate":"'"$(date -u +%FT%TZ)"'"`);
    expect(first).not.toMatch(/"eventDate":"\d/);
  });
});

describe('docs/operations.md: rebuilding the report aggregates', () => {
  it("names this build's fold version, which the watermark's guard asks for", () => {
    const versions = [...read('docs/operations.md').matchAll(/set_config\('tg_ingest\.fold_version', '(\d+)'/g)];
    expect(versions.map((m) => m[1])).toEqual([FOLD_VERSION]);
  });
});

describe('README.md and docs/operations.md', () => {
  it('documents every environment variable src/config/config.ts reads, and no other', () => {
    const source = read('src/config/config.ts');
    // The literal names passed to the readers: raw(env, 'X'), integer(env, 'X', …), flag(env, 'X'), ….
    const read_ = new Set(
      [...source.matchAll(/\b(?:raw|integer|positiveNumber|flag|hostName)\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)].map(
        (m) => m[1]!,
      ),
    );
    expect(read_.size).toBeGreaterThan(30);
    const documented = new Set<string>();
    for (const [first] of tableRows(section(readme, '## Configuration'))) {
      const names = [...(first ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!);
      if (names.length === 0) throw new Error(`a row of the configuration table names no variable: ${first}`);
      for (const n of names) documented.add(n);
    }
    expect({
      missing: [...read_].filter((v) => !documented.has(v)),
      unknown: [...documented].filter((v) => !read_.has(v)),
    }).toEqual({ missing: [], unknown: [] });
  });

  it('lists every tg_ingest_ metric the service registers, and no other', async () => {
    const zero = () => 0;
    const metrics = new Metrics({
      poolQueue: zero,
      poolUtilization: zero,
      writerPending: zero,
      writerQueuedRows: zero,
      writerQueueDelayMs: zero,
      inlineQueueWaitMs: zero,
      lowPriorityLookups: zero,
      bodyBytes: zero,
      heldAnswers: zero,
      liveViewers: zero,
      caches: () => ({}),
      tasks: () => new Map(),
      unauthenticatedWaiting: zero,
      quarantineDropped: zero,
    });
    const registered = new Set(
      (await metrics.registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith('tg_ingest_')),
    );
    expect(registered.size).toBeGreaterThan(10);
    const documented = new Set<string>();
    for (const [first] of tableRows(section(operations, '## Observability'))) {
      for (const m of (first ?? '').matchAll(/`(tg_ingest_[a-z_]+)`/g)) documented.add(m[1]!);
    }
    expect({
      missing: [...registered].filter((n) => !documented.has(n)),
      unknown: [...documented].filter((n) => !registered.has(n)),
    }).toEqual({ missing: [], unknown: [] });
  });

  it('names the label values of the cache and replay metrics as the code has them', async () => {
    const rows = new Map(
      tableRows(section(operations, '## Observability')).map((r) => [
        /`(tg_ingest_[a-z_]+)`/.exec(r[0] ?? '')?.[1],
        r[2] ?? '',
      ]),
    );
    const values = (metric: string, label: string) => {
      const m = new RegExp(`\`${label}\` \\(([^)]*)\\)`).exec(rows.get(metric) ?? '');
      return [...(m?.[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((v) => v[1]!).sort();
    };
    // The caches the shared parts (src/app/shared.ts) and the wings hand to the metrics.
    const cacheNames = [
      ...[...read('src/app/shared.ts').matchAll(/^ {4}\['(\w+)', \(\) => /gm)].map((m) => m[1]!),
      ...readdirSync(new URL('../../src/wings/', import.meta.url), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .flatMap((d) => [...read(`src/wings/${d.name}/wing.ts`).matchAll(/caches\.set\('(\w+)'/g)].map((m) => m[1]!)),
    ].sort();
    expect(cacheNames).toContain('filed_users');
    expect(cacheNames).toContain('tracking_plan');
    expect(values('tg_ingest_cache_requests_total', 'cache')).toEqual(cacheNames);
    // The outcomes of a replay, as the metrics count them.
    const zero = () => 0;
    const metrics = new Metrics({
      poolQueue: zero,
      poolUtilization: zero,
      writerPending: zero,
      writerQueuedRows: zero,
      writerQueueDelayMs: zero,
      inlineQueueWaitMs: zero,
      lowPriorityLookups: zero,
      bodyBytes: zero,
      heldAnswers: zero,
      liveViewers: zero,
      caches: () => ({}),
      tasks: () => new Map(),
      unauthenticatedWaiting: zero,
      quarantineDropped: zero,
    });
    metrics.replay({ accepted: 1, stillRejected: 1, duplicated: 1 });
    const replayed = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'tg_ingest_replayed_events_total',
    )!;
    expect(values('tg_ingest_replayed_events_total', 'outcome')).toEqual(
      replayed.values.map((v) => String(v.labels.outcome)).sort(),
    );
  });

  it('shows make run and make test on its first screen', () => {
    const firstScreen = readme.split('\n').slice(0, 25).join('\n');
    expect(firstScreen).toContain('make run');
    expect(firstScreen).toContain('make test');
  });

  it('links the API reference', () => {
    expect(readme).toContain('(docs/api.md)');
  });
});

describe('README.md and docs/', () => {
  const files = (dir: string): string[] =>
    readdirSync(join(ROOT, dir)).flatMap((name) =>
      statSync(join(ROOT, dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)],
    );
  const docs = ['README.md', ...files('docs')];

  it('refer to nothing outside the repository', () => {
    expect(docs.length).toBeGreaterThan(1);
    const offenders = docs.filter((f) => /\.\.\/shared|shared\/spec/.test(read(f)));
    expect(offenders).toEqual([]);
  });

  it('link only to files that exist', () => {
    const broken: string[] = [];
    for (const f of docs) {
      for (const m of read(f).matchAll(/\]\(([^)#\s]+)(#[^)\s]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const path = join(ROOT, f, '..', target);
        try {
          statSync(path);
        } catch {
          broken.push(`${f} → ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('docs/threat-model.md', () => {
  const model = read('docs/threat-model.md');
  const variables = (text: string) =>
    new Set([...text.matchAll(/`([A-Z][A-Z0-9_]{3,})`/g)].map((m) => m[1]!).filter((v) => /_/.test(v)));

  it('names every variable of the hostile-input table (docs/operations.md), and the table every limit variable it names', () => {
    const table = section(operations, '## Hostile input').join('\n');
    const inTable = variables(table);
    const inModel = variables(model);
    expect(inTable.size).toBeGreaterThan(10);
    // Names of things that are not settings (tables, secrets).
    const notSettings = new Set(['ADMIN_TOKEN', 'DATA_DIR']);
    expect({
      missingInModel: [...inTable].filter((v) => !inModel.has(v)),
      missingInTable: [...inModel].filter((v) => !inTable.has(v) && !notSettings.has(v)),
    }).toEqual({ missingInModel: [], missingInTable: [] });
  });

  it('points at tests that exist', () => {
    const tests = [...model.matchAll(/`(test\/[a-z0-9/_.-]+\.test\.ts)`/g)].map((m) => m[1]!);
    expect(tests.length).toBeGreaterThan(15);
    const missing = tests.filter((t) => {
      try {
        statSync(join(ROOT, t));
        return false;
      } catch {
        return true;
      }
    });
    expect(missing).toEqual([]);
  });

  it('covers every entry point', () => {
    for (const heading of [
      '## Both ingestion endpoints',
      '## bot_api (`POST /tg`)',
      '## webapp (`POST /tg/webapp`)',
      '## Admin API, admin page and live view (`/admin`, `/admin/live`)',
      '## Probes and metrics',
      '## nginx in front (`deploy/nginx.conf`)',
    ]) {
      expect(section(model, heading).length, heading).toBeGreaterThan(3);
    }
  });
});

describe('README.md and docs/: every variable named is real', () => {
  it('names only settings the service, the CLI, the tests or the benchmarks read', () => {
    const readers = ['src/config/config.ts', ...['bench', 'test', 'scripts'].flatMap((d) => listFiles(d))]
      .map(read)
      .join('\n');
    const real = new Set([
      ...[...readers.matchAll(/\b(?:raw|integer|positiveNumber|flag|hostName)\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)].map(
        (m) => m[1]!,
      ),
      ...[...readers.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!),
    ]);
    // Names that are not settings: what the shell, PostgreSQL or the client library call them.
    const notSettings = new Set(['PATH', 'HOME', 'TG_INGEST_TOKEN', 'DATA_DIR_ADMIN_TOKEN']);
    const docs = ['README.md', ...listFiles('docs')].filter((f) => f.endsWith('.md'));
    const unknown: string[] = [];
    for (const f of docs) {
      for (const m of read(f).matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)) {
        const name = m[1]!;
        if (!real.has(name) && !notSettings.has(name)) unknown.push(`${f}: ${name}`);
      }
    }
    expect([...new Set(unknown)]).toEqual([]);
  });
});

function listFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) =>
    statSync(join(ROOT, dir, name)).isDirectory() ? listFiles(join(dir, name)) : [join(dir, name)],
  );
}
