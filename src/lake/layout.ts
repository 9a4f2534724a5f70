// Where the lake keeps what: Hive-style partitions every engine reads (events by project and UTC day of receipt, users
// snapshots by project and day), and file names that follow from the export's watermark, so a window written again
// after a crash lands on the same names. Pure: paths and names only.
import { join } from 'node:path';

/** The file that names the directory's lake (its row in lake_dirs). */
export const LAKE_ID_FILE = 'lake-id';
/** Where an export writes before its files are put in place; emptied by every export before it starts. */
export const STAGING_DIR = '.staging';

export type Dataset = 'events' | 'users';

/** A window of new rows (`n-`), of history (`h-`), or a closed day's files joined into one (`c-`). */
export type FileKind = 'n' | 'h' | 'c';

const STAMP = /^\d{8}T\d{12}$/;
/** A partition's day, and a project's (or a lake's) id, as the lake's names hold them. */
export const DAY = /^\d{4}-\d{2}-\d{2}$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function projectDir(root: string, dataset: Dataset, projectId: string): string {
  if (!UUID.test(projectId)) throw new Error(`not a project id: ${projectId}`);
  return join(root, dataset, `project_id=${projectId}`);
}

export function dayDir(root: string, dataset: Dataset, projectId: string, day: string): string {
  if (!DAY.test(day)) throw new Error(`not a day: ${day}`);
  return join(projectDir(root, dataset, projectId), `date=${day}`);
}

/**
 * A window's file: its kind and where it starts (a stamp, YYYYMMDDTHHMMSSffffff in UTC, as SQL's STAMP_SQL makes it);
 * `part` numbers the files one window wrote into one day, past the first.
 */
export function windowFile(kind: 'n' | 'h', stamp: string, part = 0): string {
  if (!STAMP.test(stamp)) throw new Error(`not a stamp: ${stamp}`);
  return `${kind}-${stamp}${part === 0 ? '' : `-${part}`}.parquet`;
}

/** A closed day's one file. */
export function dayFile(day: string): string {
  if (!DAY.test(day)) throw new Error(`not a day: ${day}`);
  return `c-${day}.parquet`;
}

export const USERS_FILE = 'users.parquet';

/** The SQL that turns a timestamptz into the stamp a file name carries (fixed width: names sort as times do). */
export const STAMP_SQL = (column: string) => `to_char((${column}) AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS')`;

export interface ParsedFile {
  kind: FileKind;
  /** The window's start stamp, or the day of a joined file. */
  key: string;
}

export function parseFile(name: string): ParsedFile | null {
  const w = /^([nh])-(\d{8}T\d{12})(?:-\d+)?\.parquet$/.exec(name);
  if (w) return { kind: w[1] as 'n' | 'h', key: w[2]! };
  const c = /^c-(\d{4}-\d{2}-\d{2})\.parquet$/.exec(name);
  return c ? { kind: 'c', key: c[1]! } : null;
}

/** The lake as a funnel may read it: the watermark and the history's end, as stamps. */
export interface Published {
  /** New rows are in the lake up to here (excluded). */
  exportedBefore: string;
  /** History is in the lake from here (included); null: all of it. */
  historyFrom: string | null;
}

/**
 * Whether a file holds only rows the watermark covers: a window written but not yet committed (an export under way,
 * or one a crash interrupted) is left for the next export and read from the database meanwhile.
 */
export function isPublished(f: ParsedFile, p: Published): boolean {
  if (f.kind === 'c') return true;
  if (f.kind === 'n') return f.key < p.exportedBefore;
  return p.historyFrom === null || f.key >= p.historyFrom;
}

/** The first day (YYYY-MM-DD) that EVENTS_RETENTION_MONTHS keeps, as src/db/partitions.ts keeps months. */
export function firstKeptDay(retentionMonths: number, now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - retentionMonths, 1)).toISOString().slice(0, 10);
}
