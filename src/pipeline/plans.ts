// Tracking plans: per project, a JSON Schema (draft 2020-12) per event name, checked against each
// event as the pipeline has normalized it, in the request's field names. Compiled once per
// (project, plan version) in each thread that validates, and kept in a small LRU.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { LRUCache } from 'lru-cache';
import type { Endpoint } from '../endpoints.js';
import type { DiagnosticSink, Severity } from './diagnostics.js';
import type { NormalizedEvent } from './event.js';

export type PlanMode = 'warn' | 'block';
export type UnplannedPolicy = 'allow' | 'warn' | 'block';

export interface TrackingPlan {
  mode: PlanMode;
  unplannedEvents: UnplannedPolicy;
  /** Event name → JSON Schema of the normalized event. */
  events: Record<string, Record<string, unknown> | boolean>;
}

/** What a task carries to find (or compile) the plan: its identity and, for a first compile, its text. */
export interface PlanRef {
  key: string;
  source: string;
}

export const MAX_PLAN_BYTES = 256 * 1024;
export const MAX_SCHEMA_VIOLATIONS = 10;

interface CompiledPlan {
  mode: PlanMode;
  unplanned: UnplannedPolicy;
  validators: Map<string, ValidateFunction>;
}

/** A plan whose schemas ajv cannot compile; `message` is ajv's. */
export class PlanInvalid extends Error {
  constructor(readonly eventName: string, message: string) {
    super(message);
    this.name = 'PlanInvalid';
  }
}

/** Compiles every schema of a plan, or throws PlanInvalid naming the first that fails. */
export function compilePlan(plan: TrackingPlan): CompiledPlan {
  // One instance per plan: schemas with the same $id in two plans must not collide. Unknown keywords
  // are refused (a typo would otherwise check nothing); the usual idioms (type unions, required
  // without properties) are allowed.
  const ajv = new Ajv2020({
    allErrors: true, validateFormats: false, logger: false,
    strictSchema: true, strictNumbers: true, strictTypes: false, strictTuples: false, strictRequired: false, allowUnionTypes: true,
  });
  const validators = new Map<string, ValidateFunction>();
  for (const [name, schema] of Object.entries(plan.events)) {
    try {
      validators.set(name, ajv.compile(schema));
    } catch (err) {
      throw new PlanInvalid(name, (err as Error).message);
    }
  }
  return { mode: plan.mode, unplanned: plan.unplannedEvents, validators };
}

const compiled = new LRUCache<string, CompiledPlan>({ max: 64 });

function planFor(ref: PlanRef): CompiledPlan {
  let c = compiled.get(ref.key);
  if (c === undefined) {
    c = compilePlan(JSON.parse(ref.source) as TrackingPlan);
    compiled.set(ref.key, c);
  }
  return c;
}

const SNAKE: Record<string, string> = {
  eventName: 'event_name', eventType: 'event_type', text: 'text', platformUserId: 'platform_user_id', eventOrigin: 'event_origin',
  propsString: 'props_string', propsLong: 'props_long', propsFloat: 'props_float', propsBool: 'props_bool',
};
/** The event as a schema sees it: the request's field names, the repaired values, `tg.*` fields in their buckets as sent. */
export function eventView(ev: NormalizedEvent, endpoint: Endpoint): Record<string, unknown> {
  const view: Record<string, unknown> = { eventName: ev.eventName, eventType: ev.eventType };
  if (ev.text !== null) view.text = ev.text;
  if (endpoint === 'bot_api') {
    view.platformUserId = ev.platformUserId;
    view.eventOrigin = ev.origin;
  }
  if (ev.props !== null) Object.assign(view, ev.props);
  return view;
}

/** ajv's JSON pointer as a diagnostic path: snake_case for event fields, property keys as sent. */
function pathOf(e: ErrorObject): string {
  const parts = e.instancePath === '' ? [] : e.instancePath.slice(1).split('/').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty: string }).additionalProperty));
  if (parts.length === 0) return 'event';
  parts[0] = SNAKE[parts[0]!] ?? parts[0]!;
  return parts.join('.');
}

/**
 * Checks one accepted event against the project's plan and reports what it finds. Returns false
 * when the plan rejects the event (an error diagnostic was added).
 */
export function checkPlan(ref: PlanRef, ev: NormalizedEvent, endpoint: Endpoint, id: () => string | null, diag: DiagnosticSink): boolean {
  const plan = planFor(ref);
  const validate = plan.validators.get(ev.eventName);
  if (validate === undefined) {
    if (plan.unplanned === 'allow') return true;
    const severity: Severity = plan.unplanned === 'block' ? 'error' : 'warning';
    diag.add(id(), 'event_unplanned', 'event_name', `the tracking plan has no event named ${JSON.stringify(ev.eventName.slice(0, 64))}`, severity);
    return severity !== 'error';
  }
  if (validate(eventView(ev, endpoint))) return true;
  const severity: Severity = plan.mode === 'block' ? 'error' : 'warning';
  for (const e of (validate.errors ?? []).slice(0, MAX_SCHEMA_VIOLATIONS)) diag.add(id(), 'schema_violation', pathOf(e), e.message ?? 'is invalid', severity);
  return severity !== 'error';
}
