// The one table of diagnostic codes. `error` drops the event (counted in `rejected`);
// `warning` repairs it and it is stored (still `accepted`).

export type Severity = 'error' | 'warning';

export const DIAGNOSTICS = {
  event_missing_identity: {
    severity: 'error',
    description: 'platformUserId (bot_api endpoint) or eventName is missing or empty.',
  },
  platform_user_id_invalid: {
    severity: 'error',
    description: 'platformUserId is not a string holding a positive 64-bit integer.',
  },
  event_id_invalid: { severity: 'error', description: 'eventId is missing or not a UUID.' },
  event_date_invalid: {
    severity: 'error',
    description: 'eventDate is missing or not an ISO 8601 date-time between years 0001 and 9999.',
  },
  event_origin_invalid: { severity: 'error', description: 'eventOrigin is not "platform" or "custom".' },
  event_invalid: { severity: 'error', description: 'The event is not a JSON object (webapp endpoint).' },
  event_type_unknown: {
    severity: 'warning',
    description: 'eventType is outside the nine categories; stored as "platform".',
  },
  field_unknown: {
    severity: 'warning',
    description: 'The event carries a field that is not part of the contract; it was dropped.',
  },
  event_name_truncated: {
    severity: 'warning',
    description: 'eventName was longer than 4096 characters and was truncated.',
  },
  text_truncated: { severity: 'warning', description: 'text was longer than 4096 characters and was truncated.' },
  text_type_invalid: { severity: 'warning', description: 'text is not a string; it was dropped.' },
  prop_key_reserved: {
    severity: 'warning',
    description: 'The property key starts with "$" (reserved for the platform); the property was dropped.',
  },
  prop_key_invalid: {
    severity: 'warning',
    description: 'The property key does not match ^[A-Za-z_][A-Za-z0-9_.]{0,127}$; the property was dropped.',
  },
  prop_value_type_invalid: {
    severity: 'warning',
    description: "The value's type does not fit its bucket; the property was dropped.",
  },
  prop_value_truncated: {
    severity: 'warning',
    description: 'The string value was longer than 4096 characters and was truncated.',
  },
  prop_type_mismatch: {
    severity: 'warning',
    description: 'A canonical tg.* field was sent in the wrong bucket; it stays a flat property.',
  },
  props_limit_exceeded: {
    severity: 'warning',
    description: 'The event has more than 1024 properties; the surplus was dropped in order of appearance.',
  },
  props_bucket_invalid: {
    severity: 'warning',
    description: 'A property bucket is not a JSON object; the bucket was dropped.',
  },
  string_nul_removed: {
    severity: 'warning',
    description: 'A string held NUL characters, which PostgreSQL cannot store; they were removed.',
  },
  string_unicode_repaired: {
    severity: 'warning',
    description: 'A string held unpaired UTF-16 surrogates; each was replaced by U+FFFD.',
  },
  user_profile_invalid: {
    severity: 'warning',
    description: 'An item of users[] is not a valid profile; it was skipped.',
  },
  bot_snapshot_invalid: { severity: 'warning', description: 'The bot snapshot is not valid; it was ignored.' },
  schema_violation: {
    severity: 'error',
    description:
      "The event breaks its schema in the project's tracking plan: an error (the event is rejected and quarantined) under mode block, a warning (stored) under mode warn.",
  },
  event_unplanned: {
    severity: 'error',
    description:
      "The event's name is not in the project's tracking plan: an error under unplannedEvents block, a warning under warn, nothing under allow.",
  },
  bot_snapshot_mismatch: {
    severity: 'warning',
    description:
      "The bot snapshot names a messengerBotId other than the bot's configured one (set with the admin API only); it was ignored.",
  },
  user_suppressed: {
    severity: 'error',
    description:
      'The user asked for their data to be erased and not kept (an erasure with suppress): the event is dropped, neither stored, billed nor quarantined.',
  },
  quarantine_full: {
    severity: 'warning',
    description:
      "The project's quarantine holds QUARANTINE_MAX_BYTES; this request's rejected events were answered as usual but not kept (counted in the admin summary).",
  },
} as const satisfies Record<string, { severity: Severity; description: string }>;

export type DiagnosticCode = keyof typeof DIAGNOSTICS;

/** The wire form; paths are snake_case for event fields. */
export interface Diagnostic {
  event_id: string | null;
  code: DiagnosticCode;
  severity: Severity;
  path: string;
  message: string;
}

export type DiagnosticCounts = Partial<Record<`${DiagnosticCode}/${Severity}`, number>>;

/** Codes whose severity the project's tracking plan decides (the table gives the stricter one). */
export const PLAN_CODES: ReadonlySet<DiagnosticCode> = new Set(['schema_violation', 'event_unplanned']);

export const MAX_DIAGNOSTICS = 100;
/** Kept per event for the quarantine and the live view. */
export const MAX_EVENT_DIAGNOSTICS = 50;

/**
 * Collects diagnostics for one request: all are counted, the first 100 are kept for the response.
 * While an event is being checked (between beginEvent and endEvent), its own diagnostics are kept
 * apart as well, so that a rejected event can be quarantined with every reason.
 */
export class DiagnosticSink {
  readonly items: Diagnostic[] = [];
  truncated = false;
  /** Per "code/severity": a plan's codes come with either severity. */
  readonly counts: DiagnosticCounts = {};
  private current: Diagnostic[] | null = null;

  beginEvent(): void {
    this.current = [];
  }

  /** The diagnostics of the event begun last. */
  endEvent(): Diagnostic[] {
    const d = this.current ?? [];
    this.current = null;
    return d;
  }

  add(
    eventId: string | null,
    code: DiagnosticCode,
    path: string,
    message: string,
    severity: Severity = DIAGNOSTICS[code].severity,
  ): void {
    const key = `${code}/${severity}` as const;
    this.counts[key] = (this.counts[key] ?? 0) + 1;
    const item: Diagnostic = { event_id: eventId, code, severity, path, message };
    if (this.current !== null && this.current.length < MAX_EVENT_DIAGNOSTICS) this.current.push(item);
    if (this.items.length < MAX_DIAGNOSTICS) {
      this.items.push(item);
    } else {
      this.truncated = true;
    }
  }
}
