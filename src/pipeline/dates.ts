// eventDate: an ISO 8601 date-time, normalized to one form PostgreSQL always accepts.
// A missing offset means UTC. Years are limited to 0001-9999 so no value can fall outside
// what timestamptz stores; fractions beyond microseconds are cut (PostgreSQL keeps microseconds).

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(year: number, month: number): number {
  if (month !== 2) return DAYS[month - 1]!;
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
}

/** Two ASCII digits at `i` as a number, or NaN. */
function digits2(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : Number.NaN;
}

/**
 * The form almost every client sends (what toISOString() prints): YYYY-MM-DDTHH:MM:SS, up to six
 * fraction digits, Z. Already normalized, so it is returned as it came once checked; anything else
 * (or anything this finds wrong) takes the general path, which decides.
 */
function canonicalUtc(value: string): boolean {
  const n = value.length;
  if (n !== 20 && (n < 22 || n > 27)) return false;
  if (
    value.charCodeAt(4) !== 45 ||
    value.charCodeAt(7) !== 45 ||
    value.charCodeAt(10) !== 84 ||
    value.charCodeAt(13) !== 58 ||
    value.charCodeAt(16) !== 58 ||
    value.charCodeAt(n - 1) !== 90
  )
    return false;
  if (n > 20) {
    if (value.charCodeAt(19) !== 46) return false;
    for (let i = 20; i < n - 1; i++) {
      const c = value.charCodeAt(i);
      if (c < 48 || c > 57) return false;
    }
  }
  const year = digits2(value, 0) * 100 + digits2(value, 2);
  const month = digits2(value, 5);
  const day = digits2(value, 8);
  return (
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    digits2(value, 11) <= 23 &&
    digits2(value, 14) <= 59 &&
    digits2(value, 17) <= 59
  );
}

/** The normalized timestamp, or null when the value is not a date-time we store. */
export function normalizeDate(value: string): string | null {
  if (canonicalUtc(value)) return value;
  if (value.length > 40) return null;
  const m = ISO.exec(value);
  if (m === null) return null;
  const year = +m[1]!;
  const month = +m[2]!;
  const day = +m[3]!;
  const hour = +m[4]!;
  const minute = +m[5]!;
  const second = m[6] === undefined ? 0 : +m[6];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offset = 'Z';
  if (m[9] !== undefined) {
    const oh = +m[10]!;
    const om = m[11] === undefined ? 0 : +m[11];
    if (oh > 14 || om > 59 || (oh === 14 && om > 0)) return null;
    offset = `${m[9]}${m[10]}:${m[11] ?? '00'}`;
  }
  const frac = m[7] === undefined ? '' : `.${m[7].slice(0, 6)}`;
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${frac}${offset}`;
}
