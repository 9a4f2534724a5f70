// Validation and repair of one event: a pure function of (event, mode) → (normalized event | null,
// diagnostics). It runs unchanged in a worker, on the main thread and in unit tests.
import type { Endpoint } from '../base/endpoints.js';
import { normalizeDate } from './dates.js';
import type { DiagnosticSink } from './diagnostics.js';
import { isUserId } from './ids.js';
import { ACTION_FIELDS, actionKey, TG_PREFIX, TG_REGISTRY, type FieldType } from './registry.js';
import { displayKey, repairString, SUSPICIOUS, truncateCodePoints } from './strings.js';

/** The event types. Append only, in this order: a report summary stores a type by its index (summary.ts). */
export const EVENT_TYPES: ReadonlySet<string> = new Set([
  'message',
  'interaction',
  'payment',
  'membership',
  'business',
  'poll',
  'reaction',
  'boost',
  'platform',
]);

export const LIMITS = Object.freeze({
  textChars: 4096,
  stringValueChars: 4096,
  eventNameChars: 4096,
  propsPerEvent: 1024,
});

export type Origin = 'platform' | 'custom';
type Props = Record<string, unknown>;

export interface NormalizedEvent {
  eventId: string;
  eventName: string;
  eventType: string;
  eventDate: string;
  /** Decimal digits of a positive int64; on the webapp endpoint the caller supplies the initData user. */
  platformUserId: string | null;
  origin: Origin;
  text: string | null;
  /** Each bucket as JSON text (built while checking, never as an object), null when empty. */
  propsString: string | null;
  propsLong: string | null;
  propsFloat: string | null;
  propsBool: string | null;
  /** The promoted "$tg" section as JSON text. */
  tg: string | null;
  /** tg.start_param when the tg section holds it: the campaign the reports file the user under. */
  startParam: string | null;
  actionKey: string | null;
  /**
   * The kept properties as objects, by bucket and with their names as sent; built only for a tracking plan to check.
   */
  props: Partial<Record<'propsString' | 'propsLong' | 'propsFloat' | 'propsBool', Record<string, unknown>>> | null;
}

export const PROP_KEY = /^[A-Za-z_][A-Za-z0-9_.]{0,127}$/;

/** The fields of an event on each endpoint; anything else is dropped with a field_unknown warning. */
const FIELDS: Record<Endpoint, ReadonlySet<string>> = {
  bot_api: new Set([
    'eventId',
    'eventName',
    'eventDate',
    'eventType',
    'platformUserId',
    'eventOrigin',
    'text',
    'propsString',
    'propsLong',
    'propsFloat',
    'propsBool',
  ]),
  // The contract says these are ignored silently on the webapp endpoint.
  webapp: new Set([
    'eventId',
    'eventName',
    'eventDate',
    'eventType',
    'platformUserId',
    'eventOrigin',
    'text',
    'propsString',
    'propsLong',
    'propsFloat',
    'propsBool',
  ]),
};

const EVENT_TYPE_LIST = [...EVENT_TYPES].join(', ');

/** How a diagnostic names the event: its id as sent (cut), since an invalid one is still the client's handle. */
export function diagnosticId(value: unknown): string | null {
  return typeof value === 'string' ? displayKey(value) : null;
}

const BUCKETS: ReadonlyArray<{
  field: 'propsString' | 'propsLong' | 'propsFloat' | 'propsBool';
  path: string;
  type: FieldType;
}> = [
  { field: 'propsString', path: 'props_string', type: 'string' },
  { field: 'propsLong', path: 'props_long', type: 'long' },
  { field: 'propsFloat', path: 'props_float', type: 'float' },
  { field: 'propsBool', path: 'props_bool', type: 'bool' },
];

function valueFits(type: FieldType, v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'long':
      return Number.isSafeInteger(v);
    case 'float':
      return typeof v === 'number' && Number.isFinite(v);
    case 'bool':
      return typeof v === 'boolean';
  }
}

const TYPE_WORDS: Record<FieldType, string> = {
  string: 'a string',
  long: 'an integer between -(2^53-1) and 2^53-1',
  float: 'a finite number',
  bool: 'a boolean',
};

/** Repairs a string for storage, reporting each repair; returns the stored value. */
function cleanString(
  s: string,
  max: number,
  id: () => string | null,
  path: string,
  truncCode: 'text_truncated' | 'prop_value_truncated' | 'event_name_truncated',
  diag: DiagnosticSink,
): string {
  let value = s;
  if (SUSPICIOUS.test(s)) {
    const r = repairString(s);
    if (r.nulRemoved) diag.add(id(), 'string_nul_removed', path, 'NUL characters were removed');
    if (r.unicodeRepaired)
      diag.add(id(), 'string_unicode_repaired', path, 'unpaired surrogates were replaced by U+FFFD');
    value = r.value;
  }
  if (value.length <= max) return value;
  const cut = truncateCodePoints(value, max);
  if (cut === null) return value;
  diag.add(id(), truncCode, path, `longer than ${max} characters; truncated`);
  return cut;
}

/**
 * Checks and repairs one event whose eventId is already known to be valid.
 * Returns null when the event is rejected (an error diagnostic was added).
 */
export function normalizeEvent(
  ev: Props,
  eventId: string,
  mode: Endpoint,
  diag: DiagnosticSink,
  withProps = false,
): NormalizedEvent | null {
  // How diagnostics name the event, computed only when one is reported.
  let shownId: string | null | undefined;
  const id = () => (shownId === undefined ? (shownId = diagnosticId(ev.eventId)) : shownId);
  let ok = true;

  let platformUserId: string | null = null;
  if (mode === 'bot_api') {
    const u = ev.platformUserId;
    if (u === undefined || u === null) {
      diag.add(id(), 'event_missing_identity', 'platform_user_id', 'platformUserId is required');
      ok = false;
    } else if (typeof u !== 'string' || !isUserId(u)) {
      diag.add(
        id(),
        'platform_user_id_invalid',
        'platform_user_id',
        'platformUserId must be a string holding a positive 64-bit integer, e.g. "123456789"',
      );
      ok = false;
    } else {
      platformUserId = u;
    }
  }

  const name = ev.eventName;
  if (typeof name !== 'string' || name === '') {
    diag.add(id(), 'event_missing_identity', 'event_name', 'eventName must be a non-empty string');
    ok = false;
  }

  const date = typeof ev.eventDate === 'string' ? normalizeDate(ev.eventDate) : null;
  if (date === null) {
    diag.add(
      id(),
      'event_date_invalid',
      'event_date',
      'eventDate must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z (years 0001-9999)',
    );
    ok = false;
  }

  let origin: Origin = 'custom';
  if (mode === 'bot_api') {
    if (ev.eventOrigin === 'platform' || ev.eventOrigin === 'custom') origin = ev.eventOrigin;
    else {
      diag.add(id(), 'event_origin_invalid', 'event_origin', 'eventOrigin must be "platform" or "custom"');
      ok = false;
    }
  }
  if (!ok) return null;

  const known = FIELDS[mode];
  for (const field in ev) {
    if (!known.has(field))
      diag.add(id(), 'field_unknown', displayKey(field), `${displayKey(field)} is not an event field; dropped`);
  }

  let eventType = ev.eventType;
  if (typeof eventType !== 'string' || !EVENT_TYPES.has(eventType)) {
    diag.add(
      id(),
      'event_type_unknown',
      'event_type',
      `eventType must be one of ${EVENT_TYPE_LIST}; stored as "platform"`,
    );
    eventType = 'platform';
  }

  const eventName = cleanString(name as string, LIMITS.eventNameChars, id, 'event_name', 'event_name_truncated', diag);

  let text: string | null = null;
  if (ev.text !== undefined && ev.text !== null) {
    if (typeof ev.text === 'string') text = cleanString(ev.text, LIMITS.textChars, id, 'text', 'text_truncated', diag);
    else diag.add(id(), 'text_type_invalid', 'text', 'text must be a string; dropped');
  }

  const out: NormalizedEvent = {
    eventId,
    eventName,
    eventType: eventType as string,
    eventDate: date!,
    platformUserId,
    origin,
    text,
    propsString: null,
    propsLong: null,
    propsFloat: null,
    propsBool: null,
    tg: null,
    startParam: null,
    actionKey: null,
    props: withProps ? {} : null,
  };
  collectProps(ev, out, mode, id, diag);
  return out;
}

/** JSON text of a value already checked against its bucket; keys need no escaping (see PROP_KEY). */
function jsonValue(type: FieldType, v: unknown): string {
  return type === 'string' ? JSON.stringify(v) : String(v);
}

function collectProps(
  ev: Props,
  out: NormalizedEvent,
  mode: Endpoint,
  id: () => string | null,
  diag: DiagnosticSink,
): void {
  const promote = out.origin === 'platform';
  let kept = 0;
  let dropped = 0;
  let tg = '';
  let action: Props | null = null;
  for (const bucket of BUCKETS) {
    // The webapp endpoint has no float bucket; the contract ignores it silently.
    if (mode === 'webapp' && bucket.type === 'float') continue;
    const src = ev[bucket.field];
    if (src === undefined || src === null) continue;
    if (typeof src !== 'object' || Array.isArray(src)) {
      diag.add(id(), 'props_bucket_invalid', bucket.path, `${bucket.field} must be a JSON object; dropped`);
      continue;
    }
    let flat = '';
    for (const key of Object.keys(src)) {
      let value = (src as Props)[key];
      if (key.charCodeAt(0) === 36 /* $ */) {
        diag.add(
          id(),
          'prop_key_reserved',
          `${bucket.path}.${displayKey(key)}`,
          'keys starting with "$" are reserved for the platform; dropped',
        );
        continue;
      }
      if (!PROP_KEY.test(key)) {
        diag.add(
          id(),
          'prop_key_invalid',
          `${bucket.path}.${displayKey(key)}`,
          'key must match ^[A-Za-z_][A-Za-z0-9_.]{0,127}$; dropped',
        );
        continue;
      }
      if (!valueFits(bucket.type, value)) {
        diag.add(
          id(),
          'prop_value_type_invalid',
          `${bucket.path}.${key}`,
          `value must be ${TYPE_WORDS[bucket.type]}; dropped`,
        );
        continue;
      }
      if (kept >= LIMITS.propsPerEvent) {
        dropped++;
        continue;
      }
      kept++;
      if (bucket.type === 'string') {
        value = cleanString(
          value as string,
          LIMITS.stringValueChars,
          id,
          `${bucket.path}.${key}`,
          'prop_value_truncated',
          diag,
        );
      }
      // Null-prototype objects: a key such as __proto__ stays data.
      if (out.props !== null) (out.props[bucket.field] ??= Object.create(null) as Record<string, unknown>)[key] = value;
      if (promote && key.startsWith(TG_PREFIX)) {
        const field = key.slice(TG_PREFIX.length);
        if (Object.hasOwn(TG_REGISTRY, field)) {
          const want = TG_REGISTRY[field]!;
          if (want === bucket.type) {
            tg += `${tg === '' ? '' : ','}"${field}":${jsonValue(bucket.type, value)}`;
            if (field === 'start_param') out.startParam = value as string;
            if (ACTION_FIELDS.has(field)) (action ??= {})[field] = value;
            continue;
          }
          diag.add(
            id(),
            'prop_type_mismatch',
            `${bucket.path}.${key}`,
            `canonical field tg.${field} belongs in props_${want}; kept as a flat property`,
          );
        }
      }
      flat += `${flat === '' ? '' : ','}"${key}":${jsonValue(bucket.type, value)}`;
    }
    if (flat !== '') out[bucket.field] = `{${flat}}`;
  }
  if (tg !== '') out.tg = `{${tg}}`;
  if (action !== null) out.actionKey = actionKey(action);
  if (dropped > 0) {
    diag.add(
      id(),
      'props_limit_exceeded',
      'props',
      `${kept + dropped} properties exceed the limit of ${LIMITS.propsPerEvent}; the last ${dropped} were dropped`,
    );
  }
}
