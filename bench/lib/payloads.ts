// Realistic request bodies (~300 B per event, every bucket, some platform events with tg.* fields)
// built once as byte templates; each request gets unique eventIds by stamping a counter into the
// first 8 hex digits of every id, so nothing is deduplicated by accident and the load generator
// spends microseconds, not milliseconds, per request.
import { randomBytes } from 'node:crypto';

export interface Template {
  buf: Buffer;
  /** Byte offsets of the 8-hex-digit slot of every eventId. */
  slots: number[];
  /** Byte offsets of the 8-decimal-digit slot of every tg.message_id. */
  numberSlots?: number[];
  events: number;
}

const NAMES = [
  'message_received',
  'command_start',
  'button_click',
  'screen_view',
  'order_created',
  'item_added',
  'search',
  'share',
];
const TYPES = ['message', 'interaction', 'payment', 'membership', 'business', 'poll', 'reaction', 'boost', 'platform'];
const SCREENS = ['home', 'catalog', 'product', 'cart', 'checkout', 'profile'];
export const SLOT_PLACEHOLDER = '00000000';

/** A per-run suffix so that ids never repeat across runs on the same database. */
export function runTail(): string {
  const r = randomBytes(6).toString('hex');
  return `${r.slice(0, 4)}-4${r.slice(4, 7)}-a${r.slice(7, 10)}`;
}

function hex12(n: number): string {
  return n.toString(16).padStart(12, '0');
}

export interface EventOptions {
  tail: string;
  users: number;
  /** webapp events carry no user id, origin or floats. */
  webapp?: boolean;
  /** Every n-th event is invalid (its platformUserId is not a number): rejected and quarantined. */
  invalidEvery?: number;
}

/**
 * A tracking plan for these events: six of the eight event names, each with 3 to 5 checked
 * properties that every generated event satisfies.
 */
export function benchPlan(mode: 'warn' | 'block'): Record<string, unknown> {
  const common = {
    eventType: { enum: TYPES },
    propsString: {
      type: 'object',
      required: ['screen', 'variant'],
      properties: { screen: { enum: SCREENS }, variant: { enum: ['a', 'b'] } },
    },
    propsLong: {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'integer', minimum: 0, maximum: 6 }, price_cents: { type: 'integer', minimum: 0 } },
    },
    propsBool: { type: 'object', properties: { first_time: { type: 'boolean' } } },
    text: { type: 'string', maxLength: 200 },
  };
  const pick = (keys: (keyof typeof common)[]) => ({
    type: 'object',
    required: ['propsString'],
    properties: Object.fromEntries(keys.map((k) => [k, common[k]])),
  });
  return {
    mode,
    unplannedEvents: 'allow',
    events: {
      message_received: pick(['eventType', 'propsString', 'propsLong']),
      command_start: pick(['eventType', 'propsString', 'propsLong', 'propsBool']),
      button_click: pick(['eventType', 'propsString', 'propsLong', 'propsBool', 'text']),
      screen_view: pick(['propsString', 'propsLong', 'propsBool']),
      order_created: pick(['eventType', 'propsString', 'propsLong', 'text']),
      item_added: pick(['eventType', 'propsString', 'propsBool', 'text']),
    },
  };
}

export function event(i: number, o: EventOptions): Record<string, unknown> {
  const platform = !o.webapp && i % 10 === 0;
  const e: Record<string, unknown> = {
    eventId: `${SLOT_PLACEHOLDER}-${o.tail}-${hex12(i)}`,
    eventName: NAMES[i % NAMES.length],
    eventDate: new Date(Date.UTC(2026, 10, 22, 10, 0, 0, i)).toISOString(),
    eventType: TYPES[i % TYPES.length],
  };
  if (!o.webapp) {
    e.eventOrigin = platform ? 'platform' : 'custom';
    e.platformUserId =
      o.invalidEvery !== undefined && i % o.invalidEvery === o.invalidEvery - 1
        ? 'not-a-user-id'
        : String(100_000_000 + ((i * 7919) % o.users));
  }
  e.propsString = {
    screen: SCREENS[i % SCREENS.length],
    variant: i % 2 ? 'a' : 'b',
    ...(platform ? { 'tg.chat_type': 'private' } : {}),
  };
  // The message id carries a slot too (1, then 8 stamped digits, then the event index), so every
  // message is a new messenger action as in real traffic.
  e.propsLong = {
    items: i % 7,
    price_cents: 1299 + i,
    ...(platform
      ? {
          'tg.chat_id': 100_000_000 + (i % o.users),
          'tg.message_id': Number(`1${'0'.repeat(8)}${String(i % 10_000).padStart(4, '0')}`),
        }
      : {}),
  };
  if (!o.webapp) e.propsFloat = { score: Math.round((i % 100) * 0.731 * 1000) / 1000 };
  e.propsBool = { first_time: i % 3 === 0 };
  if (i % 5 === 0) e.text = 'Hi, is the spring collection in stock?';
  return e;
}

export function template(body: Record<string, unknown>): Template {
  const json = JSON.stringify(body);
  const buf = Buffer.from(json);
  const slots: number[] = [];
  const needle = Buffer.from(`"${SLOT_PLACEHOLDER}-`);
  for (let at = buf.indexOf(needle); at !== -1; at = buf.indexOf(needle, at + 1)) slots.push(at + 1);
  const numberSlots: number[] = [];
  const msg = Buffer.from('"tg.message_id":1');
  for (let at = buf.indexOf(msg); at !== -1; at = buf.indexOf(msg, at + 1)) numberSlots.push(at + msg.length);
  return { buf, slots, numberSlots, events: slots.length };
}

export function serverBatch(events: number, o: EventOptions, offset = 0): Template {
  return template({ events: Array.from({ length: events }, (_, i) => event(offset + i, o)) });
}

/** A copy of the template whose ids carry `counter`. */
export function stamp(t: { buf: Buffer; slots: number[]; numberSlots?: number[] }, counter: number): Buffer {
  const out = Buffer.allocUnsafe(t.buf.length);
  t.buf.copy(out);
  const hex = (counter >>> 0).toString(16).padStart(8, '0');
  for (const at of t.slots) out.write(hex, at, 'latin1');
  if (t.numberSlots && t.numberSlots.length > 0) {
    const dec = String(counter % 100_000_000).padStart(8, '0');
    for (const at of t.numberSlots) out.write(dec, at, 'latin1');
  }
  return out;
}

/** Offsets of a placeholder slot in any buffer (e.g. COPY text made from a template). */
export function slotsIn(buf: Buffer, tail: string): number[] {
  const needle = Buffer.from(`${SLOT_PLACEHOLDER}-${tail}`);
  const slots: number[] = [];
  for (let at = buf.indexOf(needle); at !== -1; at = buf.indexOf(needle, at + 1)) slots.push(at);
  return slots;
}
