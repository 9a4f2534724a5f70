// One PostgreSQL for the whole suite: TEST_DATABASE_URL when set, otherwise a throw-away embedded
// one (the programs of TEST_PG_BIN when set: make test runs the suite again on PostgreSQL 15 so).
// Each test file then creates its own database on it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { EmbeddedPostgres } from '../src/db/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  if (url !== undefined && url !== '') {
    project.provide('databaseUrl', url);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-test-'));
  const binDir = process.env.TEST_PG_BIN || undefined;
  const pg = await EmbeddedPostgres.start({ dir, ...(binDir === undefined ? {} : { binDir }) });
  project.provide('databaseUrl', pg.superuserUrl);
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
