// A consistent backup of the embedded database while the service runs, and its restore into a fresh DATA_DIR. The
// embedded build ships no pg_dump or pg_basebackup, so this is PostgreSQL's low-level base backup: pg_backup_start,
// a copy of the cluster's files, pg_backup_stop, and the WAL written meanwhile (held by a temporary replication slot
// of the backup's own session, so no checkpoint recycles it first). Started on the copy, PostgreSQL replays that WAL
// from the checkpoint named in backup_label and opens the database as it was when the backup stopped.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';

/** DATA_DIR's own files a backup carries: the database's passwords, the admin token, the development key. */
const KEPT_BESIDE = ['postgres-password', 'service-password', 'admin-token', 'initdata-dev-key.pem'];
/** Written last: a backup without it did not finish. */
export const MANIFEST = 'backup.json';
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

function emptyOrAbsent(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}

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

/** Copies the cluster's files, leaving out what a base backup leaves out (the directories stay, empty). */
function copyCluster(cluster: string, to: string): void {
  cpSync(cluster, to, {
    recursive: true,
    preserveTimestamps: true,
    filter: (src) => {
      const rel = src.slice(cluster.length + 1);
      if (rel === '') return true;
      const [top, ...rest] = rel.split('/');
      if (rest.length === 0 && (LEFT_OUT.has(top!) || top!.startsWith('.s.PGSQL.'))) return false;
      if (EMPTIED.has(top!) && rest.length > 0) return false;
      return !rel.endsWith('pg_internal.init') && !rel.includes('pgsql_tmp');
    },
  });
}

/** A backup of the embedded database of `dataDir`, taken while it runs, into `to` (absent or empty). */
export async function backup(dataDir: string, to: string): Promise<BackupManifest> {
  if (!emptyOrAbsent(to)) throw new BackupError(`${to} is not empty: a backup goes into a directory of its own`);
  const url = superuser(dataDir);
  const cluster = join(dataDir, 'postgres');
  // One connection, one session from start to stop: the backup and the slot that keeps its WAL both belong to it.
  const sql = postgres(url, {
    max: 1,
    idle_timeout: 0,
    onnotice: () => undefined,
    connection: { application_name: 'tg-ingest backup' },
  });
  const startedAt = new Date().toISOString();
  const label = `tg-ingest ${startedAt}`;
  try {
    const slot = `tg_ingest_backup_${process.pid}`;
    await sql`SELECT pg_create_physical_replication_slot(${slot}, true, true)`;
    const [{ lsn: startLsn }] = await sql<{ lsn: string }[]>`SELECT pg_backup_start(${label}, true)::text AS lsn`;
    mkdirSync(to, { recursive: true, mode: 0o700 });
    copyCluster(cluster, join(to, 'postgres'));
    const [stop] = await sql<{ lsn: string; labelfile: string; spcmapfile: string }[]>`
      SELECT lsn::text, labelfile, spcmapfile FROM pg_backup_stop(false)`;
    // The WAL from the start's checkpoint to the stop (the stop switched to a new segment: the last one is whole).
    const wal = join(cluster, 'pg_wal');
    for (const f of readdirSync(wal))
      if (statSync(join(wal, f)).isFile()) cpSync(join(wal, f), join(to, 'postgres', 'pg_wal', f));
    writeFileSync(join(to, 'postgres', 'backup_label'), stop!.labelfile);
    if (stop!.spcmapfile !== '') writeFileSync(join(to, 'postgres', 'tablespace_map'), stop!.spcmapfile);
    chmodSync(join(to, 'postgres'), 0o700);
    for (const f of KEPT_BESIDE)
      if (existsSync(join(dataDir, f))) cpSync(join(dataDir, f), join(to, f), { preserveTimestamps: true });
    const manifest: BackupManifest = {
      label,
      startLsn,
      stopLsn: stop!.lsn,
      startedAt,
      finishedAt: new Date().toISOString(),
      postgresVersion: readFileSync(join(cluster, 'PG_VERSION'), 'utf8').trim(),
    };
    writeFileSync(join(to, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    return manifest;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Copies a finished backup into `dataDir`, which holds no database yet; the service started there recovers it. */
export function restore(from: string, dataDir: string): BackupManifest {
  const manifestFile = join(from, MANIFEST);
  if (!existsSync(manifestFile))
    throw new BackupError(`${from} holds no finished backup (no ${MANIFEST}): it was cut short, or is not a backup`);
  if (existsSync(join(dataDir, 'postgres')))
    throw new BackupError(`${dataDir} already holds a database: restore into a fresh DATA_DIR`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BackupManifest;
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  for (const f of readdirSync(from))
    if (f !== MANIFEST) cpSync(join(from, f), join(dataDir, f), { recursive: true, preserveTimestamps: true });
  chmodSync(join(dataDir, 'postgres'), 0o700);
  return manifest;
}
