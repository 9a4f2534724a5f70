// `--table`: an admin API answer as a person reads it. A list becomes rows (one column per field, nested values as
// compact JSON), a page `{items, next}` its rows and the next cursor, an object one row per field.

const CELL_MAX = 60;

export function renderTable(value: unknown): string {
  if (Array.isArray(value)) return rows(value);
  if (isObject(value) && Array.isArray(value.items)) {
    const rest = Object.entries(value).filter(([k]) => k !== 'items');
    return rows(value.items) + rest.map(([k, v]) => `${k}: ${cell(v)}\n`).join('');
  }
  if (isObject(value))
    return grid(
      ['field', 'value'],
      Object.entries(value).map(([k, v]) => [k, cell(v)]),
    );
  return `${cell(value)}\n`;
}

function rows(items: unknown[]): string {
  if (items.length === 0) return '(none)\n';
  if (!items.every(isObject))
    return grid(
      ['value'],
      items.map((v) => [cell(v)]),
    );
  const columns = [...new Set(items.flatMap((i) => Object.keys(i)))];
  return grid(
    columns,
    items.map((i) => columns.map((c) => cell(i[c]))),
  );
}

function grid(head: string[], body: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => `${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd();
  return `${[line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n')}\n`;
}

function cell(v: unknown): string {
  const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  // One line per row: control characters of stored strings never reach the terminal.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  const flat = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  return flat.length > CELL_MAX ? `${flat.slice(0, CELL_MAX - 1)}…` : flat;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
