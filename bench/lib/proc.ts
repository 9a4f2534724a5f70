// CPU and memory of processes, read from /proc (Linux), to report where the cores went.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_S = 100;

/** CPU seconds (user + system) a process has used, all threads included; or one thread's with `tid`. */
export function cpuSeconds(pid: number, tid?: number): number {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

/**
 * Seconds a thread has spent runnable but waiting for a core (Linux schedstat; NaN where the kernel does not keep it).
 * Beside its CPU seconds this tells a thread that is the bottleneck on a shared machine: on a core or waiting for one
 * nearly all the time, though its CPU alone reads well under a core.
 */
export function runQueueSeconds(pid: number, tid: number): number {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
    // All zeros where the kernel keeps no schedule statistics (the thread has run, so it cannot be 0).
    return onCpu === 0 ? Number.NaN : waiting! / 1e9;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds of every running PostgreSQL process. */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      total += cpuSeconds(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

/** Peak resident memory of a process in MiB (VmHWM). */
export function peakRssMiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Busy and total CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_S, total: total / TICKS_PER_S };
}

export interface CpuWindow {
  stop(): {
    serverCores: number;
    mainThreadCores: number;
    /** Seconds per second the main thread was runnable but waiting for a core. */
    mainThreadWaitCores: number;
    postgresCores: number;
    loadGeneratorCores: number;
    machineCores: number;
    seconds: number;
  };
}

/** CPU used from now until stop(): the service (all threads, and its main thread alone) and PostgreSQL. */
export function cpuWindow(serverPid: number): CpuWindow {
  const t0 = performance.now();
  const s0 = cpuSeconds(serverPid);
  const m0 = cpuSeconds(serverPid, serverPid);
  const w0 = runQueueSeconds(serverPid, serverPid);
  const p0 = postgresCpuSeconds();
  const g0 = cpuSeconds(process.pid);
  const c0 = machineCpuSeconds();
  return {
    stop() {
      const seconds = (performance.now() - t0) / 1000;
      return {
        serverCores: (cpuSeconds(serverPid) - s0) / seconds,
        mainThreadCores: (cpuSeconds(serverPid, serverPid) - m0) / seconds,
        mainThreadWaitCores: (runQueueSeconds(serverPid, serverPid) - w0) / seconds,
        postgresCores: (postgresCpuSeconds() - p0) / seconds,
        loadGeneratorCores: (cpuSeconds(process.pid) - g0) / seconds,
        machineCores: (machineCpuSeconds().busy - c0.busy) / seconds,
        seconds,
      };
    },
  };
}
