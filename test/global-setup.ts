// One PostgreSQL for the whole suite: TEST_DATABASE_URL when set, otherwise a throw-away embedded
// one. Each test file then creates its own database on it.
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
  const pg = await EmbeddedPostgres.start({ dir });
  project.provide('databaseUrl', pg.superuserUrl);
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
