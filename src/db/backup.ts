// A consistent backup of the embedded database while the service runs, and its restore into a fresh DATA_DIR. The
// embedded build ships no pg_dump or pg_basebackup, so this is PostgreSQL's low-level base backup: pg_backup_start,
// a copy of the cluster's files, pg_backup_stop, and the WAL written from the start on (held by a temporary
// replication slot of the backup's own session, so no checkpoint recycles it first). Started on the copy, PostgreSQL
// replays that WAL from the checkpoint named in backup_label to a consistent state.
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import postgres from 'postgres';
import { LOCK } from '../config/data-dir.js';

/** DATA_DIR's own files a backup carries: the database's passwords, the admin token, the development key. */
const KEPT_BESIDE = ['postgres-password', 'service-password', 'admin-token', 'initdata-dev-key.pem'];
/** Written last: a backup without it did not finish. */
const MANIFEST = 'backup.json';
/** Where a restore copies the cluster before it is renamed into place: a DATA_DIR holding it was cut short. */
export const RESTORING = 'postgres.restoring';
/** Whose contents a base backup leaves out (PostgreSQL's documentation: "Making a Base Backup Using the Low Level API"). */
const EMPTIED = new Set([
  'pg_wal',
  'pg_replslot',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_stat_tmp',
  'pg_subtrans',
]);
/** Files of the running server that a copy must not carry. */
const LEFT_OUT = new Set(['postmaster.pid', 'postmaster.opts', 'server.log', 'backup_label', 'tablespace_map']);
/** Temporary relations (the writer's staging tables): gone at the next start, and they come and go while copied. */
const TEMP_RELATION = /^t\d+_\d+/;

export interface BackupManifest {
  label: string;
  startLsn: string;
  stopLsn: string;
  startedAt: string;
  finishedAt: string;
  /** PostgreSQL's major version: a backup restores only into the same. */
  postgresVersion: string;
}

export class BackupError extends Error {}

/** The running embedded cluster's superuser connection, from DATA_DIR. */
function superuser(dataDir: string): string {
  const cluster = join(dataDir, 'postgres');
  const pidFile = join(cluster, 'postmaster.pid');
  const passwordFile = join(dataDir, 'postgres-password');
  if (!existsSync(pidFile) || !existsSync(passwordFile))
    throw new BackupError(`no embedded PostgreSQL is running in ${cluster}: start the service, or set DATA_DIR`);
  const port = Number(readFileSync(pidFile, 'utf8').split('\n')[3]);
  const password = readFileSync(passwordFile, 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Copies a tree file by file, each file flushed to disk. From a running cluster a file or directory gone while it is
 * copied (a relation dropped or truncated) is skipped, as pg_basebackup skips it: WAL replay brings back what the
 * database holds; `strict` (a restore) skips nothing. `keep` says what is copied, by its path below `from`.
 */
function copyTree(from: string, to: string, keep: (rel: string) => boolean, strict = false, rel = ''): void {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  let names: string[];
  try {
    names = readdirSync(from);
  } catch (err) {
    if (missing(err) && !strict) return;
    throw err;
  }
  for (const name of names) {
    const sub = rel === '' ? name : `${rel}/${name}`;
    if (!keep(sub)) continue;
    const src = join(from, name);
    const dst = join(to, name);
    try {
      const st = lstatSync(src);
      if (st.isDirectory()) copyTree(src, dst, keep, strict, sub);
      else if (st.isFile()) {
        copyFileSync(src, dst);
        chmodSync(dst, st.mode & 0o777);
        flush(dst);
      }
    } catch (err) {
      if (!missing(err) || strict) throw err;
    }
  }
  flush(to);
}

function flush(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Written beside its place and renamed into it: a write cut short leaves the file as it was, or absent. */
function writeFlushed(path: string, text: string, mode = 0o600): void {
  const temp = `${path}.partial`;
  writeFileSync(temp, text, { mode });
  flush(temp);
  renameSync(temp, path);
}

const inside = (path: string, dir: string) => {
  const r = relative(dir, path);
  return r !== '..' && !r.startsWith(`..${sep}`) && !isAbsolute(r);
};

/** A backup of the embedded database of `dataDir`, taken while it runs, into `to`, a directory it creates. */
export async function backup(dataDir: string, to: string): Promise<BackupManifest> {
  const target = resolve(to);
  if (existsSync(target)) throw new BackupError(`${target} exists: a backup goes into a new directory`);
  if (!existsSync(dirname(target))) throw new BackupError(`${dirname(target)} does not exist`);
  const url = superuser(dataDir);
  // The cluster where it really is (DATA_DIR/postgres may be a link), and never a target inside DATA_DIR.
  const cluster = realpathSync(join(dataDir, 'postgres'));
  const parent = realpathSync(dirname(target));
  if (inside(parent, realpathSync(dataDir)) || inside(parent, cluster))
    throw new BackupError(`${target} is inside DATA_DIR: a backup goes elsewhere`);
  // Its own, and readable by nobody else: it holds the database and the admin token.
  mkdirSync(target, { mode: 0o700 });
  // One connection, one session from start to stop: the backup and the slot that keeps its WAL both belong to it.
  const sql = postgres(url, {
    max: 1,
    idle_timeout: 0,
    onnotice: () => undefined,
    connection: { application_name: 'tg-ingest backup' },
  });
  const startedAt = new Date().toISOString();
  const label = `tg-ingest ${startedAt}`;
  const slot = `tg_ingest_backup_${process.pid}`;
  try {
    await sql`SELECT pg_create_physical_replication_slot(${slot}, true, true)`;
    const [started] = await sql<{ lsn: string; wal: string }[]>`
      SELECT lsn::text, pg_walfile_name(lsn) AS wal FROM pg_backup_start(${label}, true) AS lsn`;
    copyTree(cluster, join(target, 'postgres'), (rel) => {
      const [top, ...rest] = rel.split('/');
      if (rest.length === 0) return !LEFT_OUT.has(top!) && !top!.startsWith('.s.PGSQL.');
      if (EMPTIED.has(top!)) return false;
      const name = rest.at(-1)!;
      return name !== 'pg_internal.init' && name !== 'pgsql_tmp' && !(top === 'base' && TEMP_RELATION.test(name));
    });
    const [stop] = await sql<{ lsn: string; wal: string; labelfile: string; spcmapfile: string }[]>`
      SELECT lsn::text, pg_walfile_name(lsn) AS wal, labelfile, spcmapfile FROM pg_backup_stop(false)`;
    // The WAL from the start's segment on (the stop switched to a new segment: the last one needed is whole), copied
    // while the slot still holds it; then every segment from the start's to the stop's must be in the copy.
    const walCopy = join(target, 'postgres', 'pg_wal');
    copyTree(join(cluster, 'pg_wal'), walCopy, (rel) => !rel.includes('/'));
    for (const f of readdirSync(walCopy)) if (/^[0-9A-F]{24}$/.test(f) && f < started!.wal) rmSync(join(walCopy, f));
    const [held] = await sql<{ status: string | null }[]>`
      SELECT wal_status AS status FROM pg_replication_slots WHERE slot_name = ${slot}`;
    const needed = await sql<{ wal: string }[]>`
      SELECT DISTINCT pg_walfile_name(${started!.lsn}::pg_lsn + s) AS wal
      FROM generate_series(0::numeric, ${stop!.lsn}::pg_lsn - ${started!.lsn}::pg_lsn,
                           (SELECT setting::numeric FROM pg_settings WHERE name = 'wal_segment_size')) AS s
      UNION SELECT ${stop!.wal}`;
    const copied = new Set(readdirSync(walCopy));
    const lacking = needed.filter((n) => !copied.has(n.wal)).map((n) => n.wal);
    // The slot gives WAL up past max_slot_wal_keep_size: a backup that took that long lacks some.
    if ((held?.status !== 'reserved' && held?.status !== 'extended') || lacking.length > 0)
      throw new BackupError(
        `the backup took so long that PostgreSQL recycled WAL it needed${lacking.length > 0 ? ` (${lacking[0]})` : ''}: take it again`,
      );
    writeFlushed(join(target, 'postgres', 'backup_label'), stop!.labelfile);
    if (stop!.spcmapfile !== '') writeFlushed(join(target, 'postgres', 'tablespace_map'), stop!.spcmapfile);
    flush(join(target, 'postgres'));
    for (const f of KEPT_BESIDE)
      if (existsSync(join(dataDir, f))) writeFlushed(join(target, f), readFileSync(join(dataDir, f), 'utf8'));
    const manifest: BackupManifest = {
      label,
      startLsn: started!.lsn,
      stopLsn: stop!.lsn,
      startedAt,
      finishedAt: new Date().toISOString(),
      postgresVersion: readFileSync(join(cluster, 'PG_VERSION'), 'utf8').trim(),
    };
    writeFlushed(join(target, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    flush(target);
    return manifest;
  } catch (err) {
    // Nothing half-made is left to be taken for a backup, or to be in the way of the next one.
    rmSync(target, { recursive: true, force: true });
    throw err;
  } finally {
    // Ending the session ends a backup still under way and drops the temporary slot.
    await sql.end({ timeout: 5 });
  }
}

/**
 * Copies a finished backup into `dataDir`, which must hold nothing yet (the lock file of whoever restores aside, and
 * the files of this backup an earlier restore cut short wrote); the service started there recovers it. The cluster is copied beside its place and renamed into it last, so a restore
 * cut short leaves no database a service would start on (EmbeddedPostgres refuses a DATA_DIR holding RESTORING).
 */
export function restore(from: string, dataDir: string): BackupManifest {
  const source = resolve(from);
  const manifestFile = join(source, MANIFEST);
  if (!existsSync(manifestFile))
    throw new BackupError(`${source} holds no finished backup (no ${MANIFEST}): it was cut short, or is not a backup`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BackupManifest;
  for (const f of ['PG_VERSION', 'backup_label'])
    if (!existsSync(join(source, 'postgres', f)))
      throw new BackupError(`${source} is no whole backup (postgres/${f} is missing)`);
  // What an earlier restore of this backup cut short left goes, or stays as it is (its files, the same as the
  // backup's); anything else means this DATA_DIR is not fresh.
  rmSync(join(dataDir, RESTORING), { recursive: true, force: true });
  const same = (f: string) =>
    KEPT_BESIDE.includes(f) &&
    existsSync(join(source, f)) &&
    readFileSync(join(source, f), 'utf8') === readFileSync(join(dataDir, f), 'utf8');
  // A fresh file system's lost+found is no data.
  const ignored = (f: string) => f === LOCK || f === 'lost+found' || f.endsWith('.partial') || same(f);
  const held = existsSync(dataDir) ? readdirSync(dataDir).filter((f) => !ignored(f)) : [];
  if (held.length > 0)
    throw new BackupError(`${dataDir} is not empty (${held.slice(0, 3).join(', ')}): restore into a fresh DATA_DIR`);
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  copyTree(join(source, 'postgres'), join(dataDir, RESTORING), () => true, true);
  for (const f of KEPT_BESIDE)
    if (existsSync(join(source, f))) writeFlushed(join(dataDir, f), readFileSync(join(source, f), 'utf8'));
  renameSync(join(dataDir, RESTORING), join(dataDir, 'postgres'));
  flush(dataDir);
  return manifest;
}
