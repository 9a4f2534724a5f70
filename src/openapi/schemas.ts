// JSON Schema 2020-12 component schemas of the OpenAPI document: the builders the wings' schemas use, and the
// schemas of errors and diagnostics, whose enums are read from their tables (src/base/errors.ts,
// src/pipeline/diagnostics.ts), so the document follows the code when either changes. Each wing declares the
// schemas of its own bodies (src/wings/*/schemas.ts), with limits and patterns from the pipeline's own constants.
import { ERRORS, type ErrorCode } from '../base/errors.js';
import {
  DIAGNOSTICS,
  MAX_DIAGNOSTICS,
  PLAN_CODES,
  type DiagnosticCode,
  type Severity,
} from '../pipeline/diagnostics.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
export const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object',
  ...(required.length > 0 ? { required } : {}),
  properties,
  ...extra,
});
/** A response object the service builds itself: closed, so a new field is a documented change. */
export const closed = (
  properties: Record<string, Schema>,
  required = Object.keys(properties),
  description?: string,
): Schema => ({
  ...(description === undefined ? {} : { description }),
  ...obj(properties, required),
  additionalProperties: false,
});
export const count = (description: string): Schema => ({ type: 'integer', minimum: 0, description });
export const instant = { type: 'string', format: 'date-time' };
export const uuid = { type: 'string', format: 'uuid' };

// ---------------------------------------------------------------------------------------------
// Error and diagnostic codes, from their tables.

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];
export const DIAGNOSTIC_CODES = Object.keys(DIAGNOSTICS) as DiagnosticCode[];
export const SEVERITIES = [...new Set(DIAGNOSTIC_CODES.map((c) => DIAGNOSTICS[c].severity))].sort() as Severity[];

/**
 * The severities a code comes with: its table severity, or both for the codes of a tracking plan
 * (PLAN_CODES), whose severity the project's plan decides (the table holds the stricter one).
 */
export const severitiesOf = (c: DiagnosticCode): Severity[] =>
  PLAN_CODES.has(c) ? ['warning', 'error'] : [DIAGNOSTICS[c].severity];

/** The severity as the documentation words it. */
export const severityText = (c: DiagnosticCode): string =>
  PLAN_CODES.has(c) ? 'warning or error (the plan decides)' : DIAGNOSTICS[c].severity;

/** Every HTTP status of the error table, ascending. */
export const ERROR_STATUSES = [...new Set(ERROR_CODES.map((c) => ERRORS[c].status as number))].sort((a, b) => a - b);

export const codesWithStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => ERRORS[c].status === status);

/** Component name of the error body narrowed to one status. */
export const errorSchemaName = (status: number): string => `Error${status}`;

const errorList = (codes: readonly ErrorCode[]): string =>
  codes.map((c) => `- \`${c}\` (${ERRORS[c].status}): ${ERRORS[c].message}`).join('\n');

function errorBody(codes: readonly ErrorCode[], title: string): Schema {
  return closed(
    {
      error: { type: 'string', enum: [...codes], description: `Machine code:\n\n${errorList(codes)}` },
      message: {
        type: 'string',
        description: 'Human-readable reason; may be more specific than the default message above.',
      },
      details: {
        type: 'object',
        description:
          "Where useful, e.g. `{index, field}` for `event_invalid`, `{maxBytes}` for `payload_too_large`, `{errors}` (ajv) for `bad_request`; for a tracking plan that does not compile `{eventName, error}` (ajv's message), for one that is too large `{maxBytes}`.",
      },
    },
    ['error', 'message'],
    title,
  );
}

function errorSchemas(): Record<string, Schema> {
  const out: Record<string, Schema> = {
    ErrorBody: errorBody(ERROR_CODES, 'Every error other than "every event rejected".'),
  };
  for (const status of ERROR_STATUSES)
    out[errorSchemaName(status)] = errorBody(codesWithStatus(status), `The error body of a ${status}.`);
  return out;
}

function diagnosticSchemas(): Record<string, Schema> {
  // Each code has one severity: stated in the schema, so a response pairing them otherwise is invalid.
  // The codes of a tracking plan come with either, as the plan decides, and are left free.
  const severityOfCode = SEVERITIES.map((s) => ({
    if: {
      properties: {
        code: { enum: DIAGNOSTIC_CODES.filter((c) => !PLAN_CODES.has(c) && DIAGNOSTICS[c].severity === s) },
      },
    },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable.
    then: { properties: { severity: { const: s } } },
  }));
  return {
    DiagnosticCode: {
      type: 'string',
      enum: DIAGNOSTIC_CODES,
      description: `Machine code of a diagnostic:\n\n${DIAGNOSTIC_CODES.map((c) => `- \`${c}\` (${severityText(c)}): ${DIAGNOSTICS[c].description}`).join('\n')}`,
    },
    Severity: {
      type: 'string',
      enum: SEVERITIES,
      description: `\`warning\`: the event was repaired and stored (counts in \`accepted\`); \`error\`: it was dropped (counts in \`rejected\`) and kept in the project's quarantine. Each code has one severity, except ${[...PLAN_CODES].map((c) => `\`${c}\``).join(' and ')}, whose severity the project's tracking plan decides.`,
    },
    Diagnostic: {
      ...closed({
        event_id: {
          type: ['string', 'null'],
          description:
            'The eventId as sent (cut when long); null when the event has no string eventId or the item is not an event (`users[i]`, `bot`).',
        },
        code: ref('DiagnosticCode'),
        severity: ref('Severity'),
        path: {
          type: 'string',
          description:
            "The field or property concerned, snake_case: `platform_user_id`, `props_string.<key>`, `users[3]`; for a tracking plan's `schema_violation` the instance path of the failing value (`props_long.amount`, `event_type`), `event` for the event as a whole.",
        },
        message: {
          type: 'string',
          description: "Human-readable; for `schema_violation` the JSON Schema validator's message (`must be >= 1`).",
        },
      }),
      allOf: severityOfCode,
    },
    IngestionResponse: closed(
      {
        accepted: count(
          'Events ingested (possibly repaired, see warnings); includes events already stored by an earlier request.',
        ),
        rejected: count('Events dropped; each has at least one diagnostic of severity `error`.'),
        not_consumed_duplicated: count('Repeats of an earlier eventId within this request.'),
        stored_not_billed: count(
          'Events stored but not charged: another connection reported the same messenger action first.',
        ),
        diagnostics_truncated: {
          type: 'boolean',
          description: `True when there were more than ${MAX_DIAGNOSTICS} diagnostics.`,
        },
        diagnostics: { type: 'array', maxItems: MAX_DIAGNOSTICS, items: ref('Diagnostic') },
      },
      undefined,
      '`accepted + rejected + not_consumed_duplicated` equals the number of events sent.',
    ),
  };
}

/** The errors' and diagnostics' schemas, and those the wings declare beside their routes. */
export function componentSchemas(declared: Record<string, Schema>): Record<string, Schema> {
  return { ...errorSchemas(), ...diagnosticSchemas(), ...declared };
}
