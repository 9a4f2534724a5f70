// The lake's directory on disk: its id file, COPY's rows to a temporary CSV file, and listings of the partitions.
import { createWriteStream, existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Sql } from '../db/connect.js';
import { DAY, type Dataset, LAKE_ID_FILE, parseFile, projectDir, UUID } from './layout.js';

/** The lake id the directory names, or null when it names none (new, or emptied). */
export function readLakeId(dir: string): string | null {
  const p = join(dir, LAKE_ID_FILE);
  if (!existsSync(p)) return null;
  const id = readFileSync(p, 'utf8').trim();
  return UUID.test(id) ? id : null;
}

export function writeLakeId(dir: string, id: string): void {
  const p = join(dir, LAKE_ID_FILE);
  writeFileSync(`${p}.tmp`, `${id}\n`);
  renameSync(`${p}.tmp`, p);
}

/** The rows of a COPY (a SELECT's text, no parameters) written to `file` as CSV; how many bytes. */
export async function copyToCsv(sql: Sql, select: string, file: string): Promise<number> {
  const readable = await sql.unsafe(`COPY (${select}) TO STDOUT (FORMAT csv)`).readable();
  await pipeline(readable, createWriteStream(file));
  return statSync(file).size;
}

/** The directories named prefix + a value `valid` accepts (a stray one, written by another tool, is passed over). */
function dirs(path: string, prefix: string, valid: RegExp): string[] {
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name.startsWith(prefix) && valid.test(d.name.slice(prefix.length)))
    .map((d) => d.name.slice(prefix.length));
}

/** The projects a dataset holds. */
export function projectsIn(root: string, dataset: Dataset): string[] {
  return dirs(join(root, dataset), 'project_id=', UUID);
}

/** The days (YYYY-MM-DD) a project's dataset holds, oldest first. */
export function daysIn(root: string, dataset: Dataset, projectId: string): string[] {
  return dirs(join(root, dataset, `project_id=${projectId}`), 'date=', DAY).sort();
}

/** The lake's Parquet files in a directory (none of the temporary ones). */
export function parquetIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.parquet') && (parseFile(n) !== null || n === 'users.parquet'))
    .sort();
}

/** Every file under a directory, at any depth, whose name ends with `suffix` (published or not), sorted. */
export function filesUnder(root: string, suffix = '.parquet'): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((n) => n.endsWith(suffix))
    .map((n) => join(root, n))
    .sort();
}

/** A project's files in the lake (events and users snapshots) and their bytes. */
export function projectFiles(root: string, projectId: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const dataset of ['events', 'users'] as const) {
    for (const f of filesUnder(projectDir(root, dataset, projectId))) {
      files++;
      bytes += statSync(f).size;
    }
  }
  return { files, bytes };
}
