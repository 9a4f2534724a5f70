// @ts-check
// The admin page: how amounts of money and diagnostic codes are shown, wherever they appear.
import { el } from './core.js';

/** The messenger's Stars: not an ISO 4217 code, and counted in whole stars. */
const STARS = 'XTR';
/** A currency as Intl names it. @param {string} currency */
const codeOf = (currency) => String(currency).toUpperCase();
/** Codes Intl has data for; it would otherwise format any well-formed code with 2 made-up decimals. */
const KNOWN_CURRENCIES =
  typeof Intl.supportedValuesOf === 'function' ? new Set(Intl.supportedValuesOf('currency')) : null;

/**
 * The digits after the point of a currency's amounts (2 for USD, 0 for JPY), or null where amounts are whole counts
 * shown with the code: Stars, codes Intl has no data for, malformed codes.
 * @param {string} currency
 * @returns {number | null}
 */
export function fractionDigits(currency) {
  const code = codeOf(currency);
  const known = DIGITS.get(code);
  if (known !== undefined) return known;
  const digits = digitsOf(code);
  DIGITS.set(code, digits);
  return digits;
}

/** Digits already worked out, by code: an axis asks for every tick, a legend for every hover. */
const DIGITS = /** @type {Map<string, number | null>} */ (new Map());

/** @param {string} code @returns {number | null} */
function digitsOf(code) {
  if (code === STARS || (KNOWN_CURRENCIES !== null && !KNOWN_CURRENCIES.has(code))) return null;
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2
    );
  } catch {
    return null; // a malformed code is a RangeError
  }
}

/**
 * A total in the currency's smallest units (a number, or a decimal string beyond 2^53) as money:
 * 1999 USD is $19.99. The split into units and fraction is BigInt arithmetic, so a string loses no
 * digit; Intl only lays the parts out. Stars, unknown and invalid codes read "1,999 XTR".
 * @param {unknown} amount
 * @param {string} currency
 * @returns {string}
 */
export function formatMoney(amount, currency) {
  const valid =
    typeof amount === 'number' ? Number.isSafeInteger(amount) : typeof amount === 'string' && /^-?[0-9]+$/.test(amount);
  if (!valid) return `${String(amount)} ${currency}`;
  const minor = BigInt(/** @type {number | string} */ (amount));
  const digits = fractionDigits(currency);
  if (digits === null) return `${new Intl.NumberFormat().format(minor)} ${currency}`;
  const nf = new Intl.NumberFormat(undefined, { style: 'currency', currency: codeOf(currency) });
  const scale = 10n ** BigInt(digits);
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const units = abs / scale;
  const fraction = (abs % scale).toString().padStart(digits, '0');
  // Intl formats the whole units exactly (BigInt at any size, -0 keeps the sign of -$0.05); the
  // fraction it would print (always zeros) is replaced by the real digits, in the locale's numerals.
  const digit = new Intl.NumberFormat(undefined, { useGrouping: false });
  return nf
    .formatToParts(negative ? (units === 0n ? -0 : -units) : units)
    .map((part) => (part.type === 'fraction' ? [...fraction].map((d) => digit.format(Number(d))).join('') : part.value))
    .join('');
}

/**
 * An amount in whole units of the currency (a chart's scale: 17.98 for $17.98), as the axis labels it: "$17.98",
 * "$20", or "1,500" where the axis is labelled with the code (Stars).
 * @param {number} units
 * @param {string} currency
 * @returns {string}
 */
export function formatUnits(units, currency) {
  const digits = fractionDigits(currency);
  if (digits === null) return new Intl.NumberFormat().format(units);
  return new Intl.NumberFormat(undefined, {
    style: 'currency',
    currency: codeOf(currency),
    minimumFractionDigits: 0,
    maximumFractionDigits: digits,
  }).format(units);
}

/**
 * Each code once with its first message, errors (the reasons an event was refused) before warnings.
 * @param {unknown} diagnostics as sent by the service (checked here: the live view's come from any event)
 * @returns {{ code: string, severity: unknown, message: string }[]}
 */
export function codesOf(diagnostics) {
  /** @type {Map<string, { code: string, severity: unknown, message: string }>} */
  const seen = new Map();
  for (const d of Array.isArray(diagnostics) ? diagnostics : []) {
    if (!d || typeof d.code !== 'string') continue;
    const had = seen.get(d.code);
    if (!had || (had.severity !== 'error' && d.severity === 'error'))
      seen.set(d.code, { code: d.code, severity: d.severity, message: had ? had.message : String(d.message ?? '') });
  }
  return [...seen.values()].sort((a, b) => (a.severity === 'error' ? 0 : 1) - (b.severity === 'error' ? 0 : 1));
}

/** @param {unknown} diagnostics @returns {HTMLElement} */
export function codeList(diagnostics) {
  const codes = codesOf(diagnostics);
  if (codes.length === 0) return el('span', { class: 'muted' }, '—');
  return el(
    'span',
    { class: 'codes' },
    ...codes.map((c) =>
      el(
        'code',
        { class: `code ${c.severity === 'error' ? 'error' : 'warning'}`, title: c.message },
        c.code,
        c.severity === 'error' ? null : el('span', { class: 'sr-only' }, ' (warning)'),
      ),
    ),
  );
}
