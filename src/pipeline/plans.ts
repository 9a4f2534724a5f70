// Tracking plans: per project, a JSON Schema (draft 2020-12) per event name, checked against each
// event as the pipeline has normalized it, in the request's field names. Compiled once per
// (project, plan version) in each thread that validates, and kept in a small LRU.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';
import type { Endpoint } from '../base/endpoints.js';
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
  /** Why a stored plan no longer compiles (one put before this version's checks): every event is reported. */
  broken?: string;
}

/** A plan whose schemas ajv cannot compile; `message` is ajv's. */
export class PlanInvalid extends Error {
  constructor(
    readonly eventName: string,
    message: string,
  ) {
    super(message);
    this.name = 'PlanInvalid';
  }
}

/**
 * Patterns (pattern, patternProperties) run on RE2's linear-time engine instead of JavaScript's
 * backtracking one: a schema is the admin's, the string the client's, and ^(\w+\s?)*$ against 40
 * letters and a "!" never finished on the backtracking engine. re2js (pure JavaScript) was chosen
 * over re2-wasm: 0.2-31 µs against 2-82 µs per test here, from 3 to 4097 characters. A pattern RE2
 * cannot take (lookahead, backreferences) fails to compile, so the plan is refused at PUT.
 */
const re2: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    // ajv keys the patterns it has compiled by toString(): each needs its own.
    return { test: (s: string) => re.test(s), toString: () => `/${pattern}/${flags}` };
  },
  { code: 're2' },
);

/** At most this many schemas (through $ref, allOf, anyOf, …) may apply to one value of an event. */
export const MAX_SAME_VALUE_SCHEMAS = 1000;

/** Keywords whose subschemas apply to the same instance (recursion through them never ends). */
const SAME_INSTANCE_ONE = ['not', 'if', 'then', 'else'];
const SAME_INSTANCE_LIST = ['allOf', 'anyOf', 'oneOf'];
const UNSUPPORTED = ['$id', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor'];

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The subschema a local $ref ("#", "#/json/pointer" or "#anchor") names, or undefined. */
function resolveRef(root: Node, ref: string, anchors: Map<string, Node>): Node | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return anchors.get(ref.slice(1));
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    at = Array.isArray(at) ? at[Number(part)] : isNode(at) ? at[part] : undefined;
  }
  return isNode(at) ? at : undefined;
}

/**
 * Why a schema cannot be checked in bounded time, or null. A $ref cycle that stays on one
 * instance ({"$ref": "#"}, or through allOf/anyOf/not/if…) recurses until the stack overflows on
 * every event; cycles through properties or items end with the (bounded) depth of the event.
 */
export function unboundedSchema(schema: unknown): string | null {
  if (!isNode(schema)) return null;
  const anchors = new Map<string, Node>();
  const all: Node[] = [];
  const collect = (v: unknown): string | null => {
    if (Array.isArray(v)) {
      for (const x of v) {
        const why = collect(x);
        if (why !== null) return why;
      }
      return null;
    }
    if (!isNode(v)) return null;
    all.push(v);
    for (const k of UNSUPPORTED)
      if (k in v) return `${k} is not supported in a tracking plan (use "$ref": "#/$defs/…")`;
    if (typeof v.$anchor === 'string') anchors.set(v.$anchor, v);
    if (typeof v.$ref === 'string' && !v.$ref.startsWith('#'))
      return `"$ref": ${JSON.stringify(v.$ref.slice(0, 64))} names another document; only references within the schema (#…) are supported`;
    for (const k in v) {
      if (k === 'enum' || k === 'const' || k === 'examples' || k === 'default') continue;
      const why = collect(v[k]);
      if (why !== null) return why;
    }
    return null;
  };
  const unsupported = collect(schema);
  if (unsupported !== null) return unsupported;
  const next = (n: Node): Node[] => {
    const out: Node[] = [];
    if (typeof n.$ref === 'string') {
      const target = resolveRef(schema, n.$ref, anchors);
      if (target !== undefined) out.push(target);
    }
    for (const k of SAME_INSTANCE_ONE) if (isNode(n[k])) out.push(n[k] as Node);
    for (const k of SAME_INSTANCE_LIST)
      if (Array.isArray(n[k])) for (const x of n[k] as unknown[]) if (isNode(x)) out.push(x);
    if (isNode(n.dependentSchemas)) for (const x of Object.values(n.dependentSchemas)) if (isNode(x)) out.push(x);
    return out;
  };
  // Depth-first search for a cycle of same-instance edges (iterative: a plan may nest deeply).
  // Without a cycle, how many schemas end up applied to one value is counted too: references that
  // fan out ({"allOf": [{"$ref": "#/$defs/a1"}, {"$ref": "#/$defs/a1"}]}, a1 the same over a2, …)
  // grow it exponentially without ever looping.
  const applications = new Map<Node, number>();
  const state = new Map<Node, 1 | 2>();
  for (const start of all) {
    if (state.has(start)) continue;
    const stack: { node: Node; edges: Node[]; i: number }[] = [{ node: start, edges: next(start), i: 0 }];
    state.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.i >= top.edges.length) {
        state.set(top.node, 2);
        let n = 1;
        for (const e of top.edges) n += applications.get(e) ?? 1;
        if (n > MAX_SAME_VALUE_SCHEMAS)
          return `its references apply more than ${MAX_SAME_VALUE_SCHEMAS} schemas to one value`;
        applications.set(top.node, n);
        stack.pop();
        continue;
      }
      const to = top.edges[top.i++]!;
      const seen = state.get(to);
      if (seen === 1)
        return 'a "$ref" leads back to a schema that applies to the same value, so checking any event would never end';
      if (seen === undefined) {
        state.set(to, 1);
        stack.push({ node: to, edges: next(to), i: 0 });
      }
    }
  }
  return null;
}

/** The value at a JSON pointer of a schema, shown short. */
function shown(schema: unknown, pointer: string): string {
  let at: unknown = schema;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    at = Array.isArray(at) ? at[Number(key)] : isNode(at) ? at[key] : undefined;
  }
  const text = JSON.stringify(at) ?? 'nothing';
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/**
 * Why a schema is not one, in a person's words: where, what was there, and what would do. The
 * meta-schema reports every branch it tried; the one that lists the allowed values says most.
 */
function schemaError(schema: unknown, errors: ErrorObject[]): string {
  const deepest = Math.max(...errors.map((e) => e.instancePath.length));
  const here = errors.filter((e) => e.instancePath.length === deepest);
  const best = here.find((e) => Array.isArray((e.params as { allowedValues?: unknown }).allowedValues)) ?? here[0];
  if (best === undefined) return 'it is not a JSON Schema';
  const where = best.instancePath === '' ? 'the schema' : best.instancePath;
  const allowed = (best.params as { allowedValues?: unknown[] }).allowedValues;
  const expected =
    allowed !== undefined
      ? `it must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`
      : `it ${best.message ?? 'is not valid'}`;
  return `at ${where}: ${shown(schema, best.instancePath)} is not valid there; ${expected}`;
}

/** Compiles every schema of a plan, or throws PlanInvalid naming the first that fails. */
export function compilePlan(plan: TrackingPlan): CompiledPlan {
  // One instance per plan: schemas with the same name in two plans must not collide. Unknown keywords
  // are refused (a typo would otherwise check nothing); the usual idioms (type unions, required
  // without properties) are allowed.
  const ajv = new Ajv2020({
    allErrors: true,
    validateFormats: false,
    logger: false,
    code: { regExp: re2 },
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
  });
  const validators = new Map<string, ValidateFunction>();
  for (const [name, schema] of Object.entries(plan.events)) {
    const unbounded = unboundedSchema(schema);
    if (unbounded !== null) throw new PlanInvalid(name, unbounded);
    if (!(ajv.validateSchema(schema) as boolean)) throw new PlanInvalid(name, schemaError(schema, ajv.errors ?? []));
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
    const plan = JSON.parse(ref.source) as TrackingPlan;
    try {
      c = compilePlan(plan);
    } catch (err) {
      if (!(err instanceof PlanInvalid)) throw err;
      c = {
        mode: plan.mode,
        unplanned: plan.unplannedEvents,
        validators: new Map(),
        broken: `the schema of event ${JSON.stringify(err.eventName.slice(0, 64))} does not compile: ${err.message.slice(0, 200)}`,
      };
    }
    compiled.set(ref.key, c);
  }
  return c;
}

const SNAKE: Record<string, string> = {
  eventName: 'event_name',
  eventType: 'event_type',
  text: 'text',
  platformUserId: 'platform_user_id',
  eventOrigin: 'event_origin',
  propsString: 'props_string',
  propsLong: 'props_long',
  propsFloat: 'props_float',
  propsBool: 'props_bool',
};
/**
 * The event as a schema sees it: the request's field names, the repaired values, `tg.*` fields in their buckets as
 * sent.
 */
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
  const parts =
    e.instancePath === ''
      ? []
      : e.instancePath
          .slice(1)
          .split('/')
          .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties')
    parts.push(String((e.params as { additionalProperty: string }).additionalProperty));
  if (parts.length === 0) return 'event';
  parts[0] = SNAKE[parts[0]!] ?? parts[0]!;
  return parts.join('.');
}

/**
 * Checks one accepted event against the project's tracking plan and reports what it finds. Returns false
 * when the plan rejects the event (an error diagnostic was added).
 */
export function checkPlan(
  ref: PlanRef,
  ev: NormalizedEvent,
  endpoint: Endpoint,
  id: () => string | null,
  diag: DiagnosticSink,
): boolean {
  const plan = planFor(ref);
  if (plan.broken !== undefined) {
    const severity: Severity = plan.mode === 'block' ? 'error' : 'warning';
    diag.add(
      id(),
      'schema_violation',
      'event',
      `the tracking plan cannot be used: ${plan.broken}; put a corrected plan`,
      severity,
    );
    return severity !== 'error';
  }
  const validate = plan.validators.get(ev.eventName);
  if (validate === undefined) {
    if (plan.unplanned === 'allow') return true;
    const severity: Severity = plan.unplanned === 'block' ? 'error' : 'warning';
    diag.add(
      id(),
      'event_unplanned',
      'event_name',
      `the tracking plan has no event named ${JSON.stringify(ev.eventName.slice(0, 64))}`,
      severity,
    );
    return severity !== 'error';
  }
  const severity: Severity = plan.mode === 'block' ? 'error' : 'warning';
  let valid: boolean;
  try {
    valid = validate(eventView(ev, endpoint)) as boolean;
  } catch (err) {
    // Refused at PUT when foreseeable (see unboundedSchema); anything else fails this event alone.
    diag.add(
      id(),
      'schema_violation',
      'event',
      `the tracking plan could not check this event (${(err as Error).message.slice(0, 200)})`,
      severity,
    );
    return severity !== 'error';
  }
  if (valid) return true;
  for (const e of (validate.errors ?? []).slice(0, MAX_SCHEMA_VIOLATIONS))
    diag.add(id(), 'schema_violation', pathOf(e), e.message ?? 'is invalid', severity);
  return severity !== 'error';
}
