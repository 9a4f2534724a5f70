// Identifiers as clients send them: UUIDs (event, bot, project and token ids) and messenger user ids.

/** A UUID as text, any case; also what the sessions' SQL matches a session_id with. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID = new RegExp(UUID_PATTERN);
/** A messenger user id as text; also published in the admin and OpenAPI schemas. */
export const USER_ID_PATTERN = '^[1-9][0-9]{0,18}$';
const USER_ID = new RegExp(USER_ID_PATTERN);
const INT64_MAX = 9223372036854775807n;

/** The lowercased UUID, or null when `value` is not one. */
export function parseUuid(value: unknown): string | null {
  return typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null;
}

/** Decimal digits of a positive int64, without leading zeros. */
export function isUserId(value: string): boolean {
  return USER_ID.test(value) && (value.length < 19 || BigInt(value) <= INT64_MAX);
}

/** A messenger id sent as a number or a digit string, as its digits; null when it is not one. */
export function messengerId(v: unknown): string | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v > 0 ? String(v) : null;
  if (typeof v === 'string') return isUserId(v) ? v : null;
  return null;
}
