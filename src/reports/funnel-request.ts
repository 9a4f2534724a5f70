// A funnel's request, checked: pure, so the route, the CLI and the tests read a body one way. Every part a client
// controls has a bound here: 2 to 10 steps, names and values as long as the pipeline stores them, a property named
// as the pipeline names keys (or a promoted field as tg.<field>), the days of a report range, a window of at most
// that range.
import { LIMITS, PROP_KEY } from '../pipeline/event.js';
import { TG_PREFIX, TG_REGISTRY } from '../pipeline/registry.js';
import { dayRange, type DayRange, MAX_REPORT_DAYS } from './range.js';

export const FUNNEL_MIN_STEPS = 2;
export const FUNNEL_MAX_STEPS = 10;
export const FUNNEL_MAX_WINDOW_S = MAX_REPORT_DAYS * 86_400;
export const FUNNEL_OPS = ['=', '!=', '>', '<'] as const;
export type FunnelOp = (typeof FUNNEL_OPS)[number];

/** Which column a filter compares in: the bucket its value's JSON type names, or a promoted field. */
export type FilterTarget =
  | { bucket: 'string' | 'float' | 'bool'; key: string }
  /** An integer: props_long, and props_float on bot_api (where a number may be stored as a float). */
  | { bucket: 'long'; key: string }
  | { bucket: 'tg'; key: string; type: 'string' | 'long' | 'float' | 'bool' };

export interface FunnelFilter {
  target: FilterTarget;
  op: FunnelOp;
  value: string | number | boolean;
}

export interface FunnelStepRequest {
  eventName: string;
  where: FunnelFilter | null;
}

export interface FunnelRequest {
  steps: FunnelStepRequest[];
  range: DayRange;
  windowS: number;
  by: 'campaign' | 'platform' | null;
}

export type FunnelCheck = { ok: true; request: FunnelRequest } | { ok: false; message: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (message: string): FunnelCheck => ({ ok: false, message });
const shown = (v: unknown) => JSON.stringify(v)?.slice(0, 40) ?? String(v);

export function checkFunnel(body: unknown, today: Date): FunnelCheck {
  if (!isObject(body)) return fail('the body must be a JSON object');
  for (const k of Object.keys(body))
    if (!['steps', 'from', 'to', 'windowS', 'by'].includes(k)) return fail(`unknown field ${shown(k)}`);
  const { steps, from, to, windowS, by } = body;
  if (!Array.isArray(steps) || steps.length < FUNNEL_MIN_STEPS || steps.length > FUNNEL_MAX_STEPS)
    return fail(`steps must be an array of ${FUNNEL_MIN_STEPS} to ${FUNNEL_MAX_STEPS} steps`);
  const checked: FunnelStepRequest[] = [];
  for (const [i, s] of steps.entries()) {
    const step = checkStep(s, `steps[${i}]`);
    if (typeof step === 'string') return fail(step);
    checked.push(step);
  }
  if (typeof from !== 'string' || typeof to !== 'string') return fail('from and to are required, as YYYY-MM-DD');
  const range = dayRange(new URLSearchParams({ from, to }), today, null);
  if (range === null || !range.ok) return fail(range?.message ?? 'from and to are required');
  if (!Number.isSafeInteger(windowS) || (windowS as number) < 1 || (windowS as number) > FUNNEL_MAX_WINDOW_S)
    return fail(`windowS must be a whole number of seconds from 1 to ${FUNNEL_MAX_WINDOW_S}`);
  if (by !== undefined && by !== 'campaign' && by !== 'platform') return fail('by must be "campaign" or "platform"');
  return { ok: true, request: { steps: checked, range: range.range, windowS: windowS as number, by: by ?? null } };
}

function checkStep(s: unknown, at: string): FunnelStepRequest | string {
  if (!isObject(s)) return `${at} must be an object with eventName`;
  for (const k of Object.keys(s)) if (k !== 'eventName' && k !== 'where') return `${at}: unknown field ${shown(k)}`;
  const name = s.eventName;
  if (typeof name !== 'string' || name === '' || name.length > LIMITS.eventNameChars || name.includes('\0'))
    return `${at}.eventName must be a string of 1 to ${LIMITS.eventNameChars} characters, without NUL`;
  if (s.where === undefined) return { eventName: name, where: null };
  const where = checkWhere(s.where, `${at}.where`);
  return typeof where === 'string' ? where : { eventName: name, where };
}

function checkWhere(w: unknown, at: string): FunnelFilter | string {
  if (!isObject(w)) return `${at} must be an object {property, op, value}`;
  for (const k of Object.keys(w))
    if (!['property', 'op', 'value'].includes(k)) return `${at}: unknown field ${shown(k)}`;
  const { property, op, value } = w;
  if (!FUNNEL_OPS.includes(op as FunnelOp)) return `${at}.op must be one of ${FUNNEL_OPS.join(' ')}`;
  const type = typeOf(value);
  if (type === null)
    return `${at}.value must be a string (up to ${LIMITS.stringValueChars} characters, no NUL), an integer between -(2^53-1) and 2^53-1, a finite number or a boolean`;
  if (type === 'bool' && op !== '=' && op !== '!=') return `${at}: a boolean compares with = or != only`;
  if (typeof property !== 'string') return `${at}.property must be a string`;
  if (property.startsWith(TG_PREFIX)) {
    const field = property.slice(TG_PREFIX.length);
    const want = Object.hasOwn(TG_REGISTRY, field) ? TG_REGISTRY[field]! : null;
    if (want === null) return `${at}.property names no promoted field: ${shown(property)}`;
    // An integer compares with a float field too; nothing else crosses types.
    if (want !== type && !(want === 'float' && type === 'long'))
      return `${at}: ${property} holds ${want} values, not ${type}`;
    return { target: { bucket: 'tg', key: field, type: want }, op: op as FunnelOp, value: value as never };
  }
  if (!PROP_KEY.test(property)) return `${at}.property must be a property key (${PROP_KEY.source}) or tg.<field>`;
  return { target: { bucket: type, key: property }, op: op as FunnelOp, value: value as never };
}

function typeOf(v: unknown): 'string' | 'long' | 'float' | 'bool' | null {
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return v.length <= LIMITS.stringValueChars && !v.includes('\0') ? 'string' : null;
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return Number.isSafeInteger(v) ? 'long' : null;
    return Number.isFinite(v) ? 'float' : null;
  }
  return null;
}
