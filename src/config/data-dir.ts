// DATA_DIR belongs to one process: a lock file names the process that holds it, and a run-time
// file tells the admin CLI where that process answers.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The lock file's name in DATA_DIR. */
export const LOCK = 'tg-ingest.pid';
const RUNTIME = 'service.json';

export class DataDirInUse extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(
      `DATA_DIR ${dir} is in use by process ${pid} (another tg-ingest); stop it, or give this instance a DATA_DIR of its own`,
    );
    this.name = 'DataDirInUse';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A recycled pid of an unrelated program does not hold the lock.
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;
  }
}

export interface DataDirLock {
  release(): void;
}

/**
 * Takes DATA_DIR for this process, or throws DataDirInUse naming the live holder. A lock left by a killed process is
 * taken over.
 */
export function lockDataDir(dir: string): DataDirLock {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const path = join(dir, LOCK);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o644 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder))
        throw new DataDirInUse(dir, holder);
      rmSync(path, { force: true });
    }
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      try {
        if (Number(readFileSync(path, 'utf8').trim()) === process.pid) rmSync(path, { force: true });
        rmSync(join(dir, RUNTIME), { force: true });
      } catch {
        // already gone
      }
    },
  };
}

/** What the admin CLI needs to find the running service. */
export interface RuntimeInfo {
  pid: number;
  /** Where the admin API answers, from this machine. */
  adminUrl: string;
  /** Where the ingestion endpoints answer, from this machine (absent in notes of older builds). */
  url?: string;
}

export function writeRuntime(dir: string, info: RuntimeInfo): void {
  writeFileSync(join(dir, RUNTIME), `${JSON.stringify(info)}\n`, { mode: 0o644 });
}

/** The running service's run-time file, or null when there is none or its process is gone. */
export function readRuntime(dir: string): RuntimeInfo | null {
  const path = join(dir, RUNTIME);
  if (!existsSync(path)) return null;
  try {
    const info = JSON.parse(readFileSync(path, 'utf8')) as RuntimeInfo;
    return typeof info.adminUrl === 'string' && Number.isInteger(info.pid) && alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}
