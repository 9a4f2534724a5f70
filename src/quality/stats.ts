// Per-project counts of this instance for the admin page's live view: the last hour by minute and
// totals since start, kept in memory (the database is not asked, so watching costs ingestion nothing).
import type { DiagnosticCounts } from '../pipeline/diagnostics.js';

export interface MinuteCounts {
  minute: string;
  accepted: number;
  rejected: number;
  duplicated: number;
  storedNotBilled: number;
}

export interface ProjectStats {
  since: string;
  minutes: MinuteCounts[];
  totals: { accepted: number; rejected: number; duplicated: number; storedNotBilled: number; redelivered: number };
  topDiagnostics: { code: string; count: number }[];
}

interface Entry {
  totals: ProjectStats['totals'];
  diagnostics: Map<string, number>;
  /** minute start (ms) → counts; at most the last 60 minutes are kept. */
  minutes: Map<number, MinuteCounts>;
}

const MINUTE = 60_000;
const WINDOW = 60;

export class IngestStats {
  private readonly projects = new Map<string, Entry>();
  private readonly since: string;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxProjects = 10_000,
  ) {
    this.since = new Date(now()).toISOString();
  }

  record(
    projectId: string,
    c: { accepted: number; rejected: number; duplicated: number; storedNotBilled: number; redelivered: number },
    diagnostics: DiagnosticCounts,
  ): void {
    let e = this.projects.get(projectId);
    if (e === undefined) {
      if (this.projects.size >= this.maxProjects) this.projects.delete(this.projects.keys().next().value!);
      e = {
        totals: { accepted: 0, rejected: 0, duplicated: 0, storedNotBilled: 0, redelivered: 0 },
        diagnostics: new Map(),
        minutes: new Map(),
      };
      this.projects.set(projectId, e);
    }
    const t = e.totals;
    t.accepted += c.accepted;
    t.rejected += c.rejected;
    t.duplicated += c.duplicated;
    t.storedNotBilled += c.storedNotBilled;
    t.redelivered += c.redelivered;
    for (const key in diagnostics) {
      const code = key.slice(0, key.indexOf('/'));
      e.diagnostics.set(code, (e.diagnostics.get(code) ?? 0) + diagnostics[key as keyof DiagnosticCounts]!);
    }
    const start = Math.floor(this.now() / MINUTE) * MINUTE;
    let m = e.minutes.get(start);
    if (m === undefined) {
      m = { minute: new Date(start).toISOString(), accepted: 0, rejected: 0, duplicated: 0, storedNotBilled: 0 };
      e.minutes.set(start, m);
      for (const k of e.minutes.keys()) if (k <= start - WINDOW * MINUTE) e.minutes.delete(k);
    }
    m.accepted += c.accepted;
    m.rejected += c.rejected;
    m.duplicated += c.duplicated;
    m.storedNotBilled += c.storedNotBilled;
  }

  /** The last 60 minutes oldest first, zeros included, so a chart needs no gap handling. */
  get(projectId: string): ProjectStats {
    const e = this.projects.get(projectId);
    const current = Math.floor(this.now() / MINUTE) * MINUTE;
    const minutes: MinuteCounts[] = [];
    for (let i = WINDOW - 1; i >= 0; i--) {
      const start = current - i * MINUTE;
      minutes.push(
        e?.minutes.get(start) ?? {
          minute: new Date(start).toISOString(),
          accepted: 0,
          rejected: 0,
          duplicated: 0,
          storedNotBilled: 0,
        },
      );
    }
    const topDiagnostics = [...(e?.diagnostics ?? new Map<string, number>())]
      .map(([code, count]) => ({ code, count }))
      .sort((a, b) => b.count - a.count || (a.code < b.code ? -1 : 1))
      .slice(0, 10);
    return {
      since: this.since,
      minutes,
      totals: { ...(e?.totals ?? { accepted: 0, rejected: 0, duplicated: 0, storedNotBilled: 0, redelivered: 0 }) },
      topDiagnostics,
    };
  }
}
