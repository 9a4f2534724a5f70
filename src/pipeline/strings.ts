// String repairs shared by every field that reaches PostgreSQL. Limits count code points and
// never split a surrogate pair; NUL and unpaired surrogates are what PostgreSQL refuses
// (text cannot hold NUL; jsonb rejects \u0000 and lone surrogate escapes).

/** Matches strings that may need a repair; clean ones skip the work. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what it looks for.
export const SUSPICIOUS = /[\u0000\uD800-\uDFFF]/;

export interface Repaired {
  value: string;
  nulRemoved: boolean;
  unicodeRepaired: boolean;
}

const CLEAN: Repaired = { value: '', nulRemoved: false, unicodeRepaired: false };

/** Returns the input unchanged (same object shape, no allocation of a new string) when it is clean. */
export function repairString(s: string): Repaired {
  if (!SUSPICIOUS.test(s)) return { ...CLEAN, value: s };
  let value = s;
  let nulRemoved = false;
  let unicodeRepaired = false;
  if (value.includes('\u0000')) {
    value = value.replaceAll('\u0000', '');
    nulRemoved = true;
  }
  if (!value.isWellFormed()) {
    value = value.toWellFormed();
    unicodeRepaired = true;
  }
  return { value, nulRemoved, unicodeRepaired };
}

/** Cuts `s` to at most `max` code points; returns null when it already fits. */
export function truncateCodePoints(s: string, max: number): string | null {
  if (s.length <= max) return null;
  let units = 0;
  let points = 0;
  while (units < s.length && points < max) {
    const c = s.charCodeAt(units);
    const pair = c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(units + 1) & 0xfc00) === 0xdc00;
    units += pair ? 2 : 1;
    points++;
  }
  return units >= s.length ? null : s.slice(0, units);
}

/** A key shown in a diagnostic path, cut so that hostile keys cannot bloat the response. */
export function displayKey(key: string): string {
  const cut = truncateCodePoints(key, 64);
  const shown = cut === null ? key : `${cut}…`;
  return repairString(shown).value;
}

export const PROFILE_CHARS = 256;

/**
 * The one rule for every profile string (users[] and initData alike): repaired (no NUL, no
 * unpaired surrogate) and cut to `max` code points without splitting a pair. undefined: absent;
 * null: explicitly empty; false: not a string.
 */
export function profileText(v: unknown, max = PROFILE_CHARS): string | null | undefined | false {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (typeof v !== 'string') return false;
  const s = repairString(v).value;
  return truncateCodePoints(s, max) ?? s;
}
