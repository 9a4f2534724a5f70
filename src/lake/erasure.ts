// The lake's part of an erasure: every file of the project that holds one of the users (events, users snapshots,
// windows not yet published too) is written again without them, and the erasure counts the files. It runs after the
// eraser has deleted their rows and holds the lake's writer lock, so no export that read their rows before the
// deletion is still writing; an export after it reads them deleted.
import { renameSync, unlinkSync } from 'node:fs';
import type { Tx } from '../db/connect.js';
import type { ErasureJob, ErasurePart, ErasureStep } from '../db/erasure.js';
import { STEP_LOCK_TIMEOUT } from '../db/erasure.js';
import { LAKE_WRITER_LOCK } from '../db/locks.js';
import type { Logger } from '../base/log.js';
import { type LakeEngine, literal } from './engine.js';
import { filesUnder } from './files.js';
import { type Dataset, projectDir } from './layout.js';
import { PARQUET, USER_COLUMN } from './rows.js';

export function lakeErasure(dir: string | null, engine: LakeEngine, log: Logger): ErasurePart {
  return {
    start: { phase: 'lake' },
    phases: ['lake'],
    step: (tx, job, at) => step(tx, job, at, dir, engine, log),
  };
}

async function step(
  tx: Tx,
  job: ErasureJob,
  _at: ErasureStep,
  dir: string | null,
  engine: LakeEngine,
  log: Logger,
): Promise<ErasureStep | null> {
  if (dir === null) return null;
  // After the export under way, if any: it holds the lock for one unit of work (a window of at most EXPORT_MAX_ROWS,
  // a day joined, a users snapshot), which can take minutes on a large backlog.
  await tx`SET LOCAL lock_timeout = '300s'`;
  await tx`SELECT pg_advisory_xact_lock(${LAKE_WRITER_LOCK})`;
  await tx.unsafe(`SET LOCAL lock_timeout = '${STEP_LOCK_TIMEOUT}'`);
  let rewritten = 0;
  for (const dataset of ['events', 'users'] as const) {
    // A rewrite a crash interrupted left its half-written file: it may hold the users.
    for (const f of filesUnder(projectDir(dir, dataset, job.projectId), '.erasing')) unlinkSync(f);
    const files = filesUnder(projectDir(dir, dataset, job.projectId));
    if (files.length === 0) continue;
    const holding = await filesHolding(engine, dataset, files, job.userIds);
    for (const file of holding) {
      await rewriteWithout(engine, dataset, file, job.userIds);
      rewritten++;
    }
  }
  if (rewritten > 0) {
    await tx`UPDATE erasures SET lake_files = lake_files + ${rewritten} WHERE erasure_id = ${job.erasureId}`;
    log.info({ erasureId: job.erasureId, files: rewritten }, 'lake files rewritten without the erased users');
  }
  return null;
}

const ids = (userIds: string[]) => `[${userIds.map((u) => `${BigInt(u)}::BIGINT`).join(', ')}]`;

async function filesHolding(
  engine: LakeEngine,
  dataset: Dataset,
  files: string[],
  userIds: string[],
): Promise<string[]> {
  const c = await engine.connect();
  try {
    const list = `[${files.map(literal).join(', ')}]`;
    const r = await c.runAndReadAll(
      `SELECT DISTINCT filename FROM read_parquet(${list}, filename = true, hive_partitioning = false, union_by_name = true)
       WHERE list_contains(${ids(userIds)}, ${USER_COLUMN[dataset]})`,
    );
    return r.getRows().map((row) => String(row[0]));
  } finally {
    c.closeSync();
  }
}

/** The file without the users, put in place of the old one (removed if nothing is left). */
async function rewriteWithout(engine: LakeEngine, dataset: Dataset, file: string, userIds: string[]): Promise<void> {
  const tmp = `${file}.erasing`;
  const c = await engine.connect();
  let left = 0;
  try {
    const col = USER_COLUMN[dataset];
    const from = `read_parquet(${literal(file)}, hive_partitioning = false)`;
    const keep = `${col} IS NULL OR NOT list_contains(${ids(userIds)}, ${col})`;
    const r = await c.runAndReadAll(`SELECT count(*)::BIGINT FROM ${from} WHERE ${keep}`);
    left = Number(r.getRows()[0]![0]);
    if (left > 0) await c.run(`COPY (SELECT * FROM ${from} WHERE ${keep}) TO ${literal(tmp)} (${PARQUET})`);
  } finally {
    c.closeSync();
  }
  // A funnel reading the file meanwhile reads the old one whole, or the new one (it lists again if it is gone).
  if (left > 0) renameSync(tmp, file);
  else unlinkSync(file);
}
