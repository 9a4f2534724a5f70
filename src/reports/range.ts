// The date range of a report request, checked: pure, so every report reads `from`, `to` and `by` one way.
import { DAY_MS } from '../base/days.js';

export const MAX_REPORT_DAYS = 366;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const FIRST_DAY_MS = Date.parse('0001-01-01T00:00:00Z');

export interface DayRange {
  from: string;
  to: string;
}

export type RangeCheck = { ok: true; range: DayRange } | { ok: false; message: string };

function parseDay(v: string): number | null {
  // Year 0000 parses in JavaScript (1 BC) but is no date to PostgreSQL, which would fail the query.
  if (!DATE.test(v) || v.startsWith('0000')) return null;
  const ms = Date.parse(`${v}T00:00:00Z`);
  // 2026-02-30 parses as March 2nd: a day that is not itself is refused.
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== v ? null : ms;
}

/**
 * `from` and `to` (UTC dates, both included). Missing ones default to the `defaultDays` ending today; `null`
 * defaults mean "all days" (the range is then null when neither is given).
 */
export function dayRange(query: URLSearchParams, today: Date, defaultDays: number | null): RangeCheck | null {
  const f = query.get('from');
  const t = query.get('to');
  if (f === null && t === null && defaultDays === null) return null;
  const todayMs = Date.parse(`${today.toISOString().slice(0, 10)}T00:00:00Z`);
  const toMs = t === null ? todayMs : parseDay(t);
  if (toMs === null) return { ok: false, message: `to must be a date as YYYY-MM-DD, got "${t!.slice(0, 40)}"` };
  // A default start is never before year 1 (PostgreSQL has no year 0).
  const fromMs =
    f === null ? Math.max(FIRST_DAY_MS, toMs - ((defaultDays ?? MAX_REPORT_DAYS) - 1) * DAY_MS) : parseDay(f);
  if (fromMs === null) return { ok: false, message: `from must be a date as YYYY-MM-DD, got "${f!.slice(0, 40)}"` };
  if (fromMs > toMs) return { ok: false, message: 'from is after to' };
  const days = (toMs - fromMs) / DAY_MS + 1;
  if (days > MAX_REPORT_DAYS)
    return { ok: false, message: `the range holds ${days} days; at most ${MAX_REPORT_DAYS} per call` };
  return {
    ok: true,
    range: { from: new Date(fromMs).toISOString().slice(0, 10), to: new Date(toMs).toISOString().slice(0, 10) },
  };
}

/** The Monday of a UTC date's ISO week (YYYY-MM-DD). */
export function mondayOf(day: string): string {
  const ms = Date.parse(`${day}T00:00:00Z`);
  return new Date(ms - ((new Date(ms).getUTCDay() + 6) % 7) * DAY_MS).toISOString().slice(0, 10);
}

/** Every day of the range, in order. */
export function daysOf(r: DayRange): string[] {
  const out: string[] = [];
  for (let ms = Date.parse(`${r.from}T00:00:00Z`); ms <= Date.parse(`${r.to}T00:00:00Z`); ms += DAY_MS)
    out.push(new Date(ms).toISOString().slice(0, 10));
  return out;
}

/** RFC 4180 CSV: a header, then rows; a cell with a comma, quote or line break is quoted. */
export function toCsv(header: string[], rows: (string | number | null)[][]): string {
  const cell = (v: string | number | null) => {
    const s = v === null ? '' : String(v);
    // A leading = + - @ is read as a formula by spreadsheets: a quote mark makes it text (an integer, such as a
    // negative net amount, stays a number).
    const safe = typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !/^-?\d+$/.test(s) ? `'${s}` : s;
    return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
  };
  return `${[header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n')}\r\n`;
}
