// Printing: a table per benchmark and, last, `RESULT <name> <value> <unit>` lines.

export type Row = Record<string, string | number>;

export function table(title: string, rows: Row[], columns?: string[]): string {
  if (rows.length === 0) return `${title}\n(no rows)\n`;
  const cols = [...new Set([...(columns ?? []), ...rows.flatMap((r) => Object.keys(r))])];
  const cell = (v: string | number | undefined) => (v === undefined ? '' : typeof v === 'number' ? fmt(v) : v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => `| ${vals.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    title,
    line(cols),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
    '',
  ].join('\n');
}

export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n) || Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 1) return n.toFixed(2);
  return n.toFixed(3);
}

/** The middle value (of an even count, the mean of the two middle ones). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((x, y) => x - y);
  return (sorted[(sorted.length - 1) >> 1]! + sorted[sorted.length >> 1]!) / 2;
}

export interface Result {
  name: string;
  value: number;
  unit: string;
}

export function resultLines(results: Result[]): string {
  return results
    .map((r) => `RESULT ${r.name} ${Number.isInteger(r.value) ? r.value : r.value.toFixed(3)} ${r.unit}`)
    .join('\n');
}
