import { describe, expect, it } from 'vitest';
import { DiagnosticSink } from '../../../src/pipeline/diagnostics.js';
import type { Endpoint } from '../../../src/base/endpoints.js';
import { normalizeEvent } from '../../../src/pipeline/event.js';

const ID = '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b';
const base = {
  eventId: ID,
  eventName: 'n',
  eventDate: '2026-11-22T10:00:00Z',
  eventType: 'message',
  eventOrigin: 'custom',
  platformUserId: '42',
};

const parse = (json: string | null) => (json === null ? null : JSON.parse(json));

function run(over: Record<string, unknown>, mode: Endpoint = 'bot_api') {
  const diag = new DiagnosticSink();
  const raw = normalizeEvent({ ...base, ...over }, ID, mode, diag);
  // Buckets are built as JSON text; compare them as objects.
  const ev = raw && {
    ...raw,
    propsString: parse(raw.propsString),
    propsLong: parse(raw.propsLong),
    propsFloat: parse(raw.propsFloat),
    propsBool: parse(raw.propsBool),
    tg: parse(raw.tg),
  };
  return { ev, raw, diags: diag.items.map((d) => [d.severity, d.code, d.path]) };
}

describe('normalizeEvent: errors drop the event', () => {
  it.each([
    [{ platformUserId: undefined }, 'event_missing_identity', 'platform_user_id'],
    [{ platformUserId: null }, 'event_missing_identity', 'platform_user_id'],
    [{ eventName: undefined }, 'event_missing_identity', 'event_name'],
    [{ eventName: '' }, 'event_missing_identity', 'event_name'],
    [{ eventName: 7 }, 'event_missing_identity', 'event_name'],
    [{ platformUserId: 42 }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ platformUserId: '0' }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ platformUserId: '-5' }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ platformUserId: '012' }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ platformUserId: '12a' }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ platformUserId: '9223372036854775808' }, 'platform_user_id_invalid', 'platform_user_id'],
    [{ eventDate: 'yesterday' }, 'event_date_invalid', 'event_date'],
    [{ eventOrigin: 'native' }, 'event_origin_invalid', 'event_origin'],
  ])('%j → %s', (over, code, path) => {
    const r = run(over);
    expect(r.ev).toBeNull();
    expect(r.diags).toContainEqual(['error', code, path]);
  });

  it('reports every error of an event', () => {
    const r = run({ platformUserId: undefined, eventName: '', eventOrigin: 'x' });
    expect(r.diags.map((d) => d[1])).toEqual([
      'event_missing_identity',
      'event_missing_identity',
      'event_origin_invalid',
    ]);
  });

  it('accepts the largest int64 user id', () => {
    expect(run({ platformUserId: '9223372036854775807' }).ev?.platformUserId).toBe('9223372036854775807');
  });
});

describe('normalizeEvent: warnings repair the event', () => {
  it('stores an unknown eventType as platform', () => {
    const r = run({ eventType: 'purchase' });
    expect(r.ev?.eventType).toBe('platform');
    expect(r.diags).toEqual([['warning', 'event_type_unknown', 'event_type']]);
  });

  it('drops reserved, invalid and mistyped properties', () => {
    const r = run({
      propsString: { $os: 'ios', '1bad': 'x', ok: 'y', num: 5, 'a-b': 'z' },
      propsLong: { s: '5', f: 1.5, big: 2 ** 53, n: -3, zero: -0 },
      propsFloat: { inf: null, f: 2.5, i: 3, s: 'x' },
      propsBool: { b: true, n: 1 },
    });
    expect(r.ev).toMatchObject({
      propsString: { ok: 'y' },
      propsLong: { n: -3, zero: 0 },
      propsFloat: { f: 2.5, i: 3 },
      propsBool: { b: true },
    });
    expect(r.diags).toEqual([
      ['warning', 'prop_key_reserved', 'props_string.$os'],
      ['warning', 'prop_key_invalid', 'props_string.1bad'],
      ['warning', 'prop_value_type_invalid', 'props_string.num'],
      ['warning', 'prop_key_invalid', 'props_string.a-b'],
      ['warning', 'prop_value_type_invalid', 'props_long.s'],
      ['warning', 'prop_value_type_invalid', 'props_long.f'],
      ['warning', 'prop_value_type_invalid', 'props_long.big'],
      ['warning', 'prop_value_type_invalid', 'props_float.inf'],
      ['warning', 'prop_value_type_invalid', 'props_float.s'],
      ['warning', 'prop_value_type_invalid', 'props_bool.n'],
    ]);
  });

  it('accepts keys up to 128 characters and refuses longer ones', () => {
    const ok = `k${'x'.repeat(127)}`;
    const long = `k${'x'.repeat(128)}`;
    const r = run({ propsString: { [ok]: 'a', [long]: 'b' } });
    expect(Object.keys(r.ev!.propsString!)).toEqual([ok]);
    expect(r.diags).toEqual([['warning', 'prop_key_invalid', `props_string.${long.slice(0, 64)}…`]]);
  });

  it('truncates long strings by code points', () => {
    const r = run({ text: '👋'.repeat(5000), propsString: { s: 'a'.repeat(4097) }, eventName: 'e'.repeat(5000) });
    expect(r.ev?.text).toBe('👋'.repeat(4096));
    expect((r.ev!.propsString!.s as string).length).toBe(4096);
    expect(r.ev?.eventName.length).toBe(4096);
    expect(r.diags).toEqual([
      ['warning', 'event_name_truncated', 'event_name'],
      ['warning', 'text_truncated', 'text'],
      ['warning', 'prop_value_truncated', 'props_string.s'],
    ]);
  });

  it('removes NUL and repairs unpaired surrogates', () => {
    const r = run({ text: 'a\u0000b', propsString: { s: 'x\uD800' }, eventName: 'n\u0000' });
    expect(r.ev).toMatchObject({ text: 'ab', propsString: { s: 'x\uFFFD' }, eventName: 'n' });
    expect(r.diags).toEqual([
      ['warning', 'string_nul_removed', 'event_name'],
      ['warning', 'string_nul_removed', 'text'],
      ['warning', 'string_unicode_repaired', 'props_string.s'],
    ]);
  });

  it('drops a bucket that is not an object and a text that is not a string', () => {
    const r = run({ propsString: ['a'], propsLong: 'x', propsBool: 3, text: 5, propsFloat: null });
    expect(r.ev).toMatchObject({ propsString: null, propsLong: null, propsBool: null, text: null });
    expect(r.diags).toEqual([
      ['warning', 'text_type_invalid', 'text'],
      ['warning', 'props_bucket_invalid', 'props_string'],
      ['warning', 'props_bucket_invalid', 'props_long'],
      ['warning', 'props_bucket_invalid', 'props_bool'],
    ]);
  });

  it('keeps the first 1024 properties across buckets, in order of appearance', () => {
    const strings = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`s${i}`, 'v']));
    const longs = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`l${i}`, i]));
    const r = run({ propsString: strings, propsLong: longs });
    expect(Object.keys(r.ev!.propsString!)).toHaveLength(1000);
    expect(Object.keys(r.ev!.propsLong!)).toEqual(Array.from({ length: 24 }, (_, i) => `l${i}`));
    expect(r.diags).toEqual([['warning', 'props_limit_exceeded', 'props']]);
  });

  it('keeps __proto__ and constructor keys as plain data', () => {
    const protoNames = Object.getOwnPropertyNames(Object.prototype).sort();
    // JSON.parse makes "__proto__" an own data key, as a request body would.
    const input = JSON.parse(
      '{"eventOrigin":"platform","propsString":{"__proto__":"p","constructor":"c","tg.__proto__":"t","tg.constructor":"u"},"propsLong":{"__proto__":5,"prototype":6},"propsBool":{"constructor":true}}',
    );
    const r = run(input);
    expect(r.diags).toEqual([]);
    // The stored JSON text holds every key, in order, as data; none was promoted to $tg.
    expect(r.raw!.propsString).toBe('{"__proto__":"p","constructor":"c","tg.__proto__":"t","tg.constructor":"u"}');
    expect(r.raw!.propsLong).toBe('{"__proto__":5,"prototype":6}');
    expect(r.raw!.propsBool).toBe('{"constructor":true}');
    expect(r.raw!.tg).toBeNull();
    expect(r.raw!.actionKey).toBeNull();
    // Read back, "__proto__" is an own property with its value, and the object's prototype is untouched.
    const props = JSON.parse(r.raw!.propsString!) as Record<string, unknown>;
    expect(Object.keys(props)).toEqual(['__proto__', 'constructor', 'tg.__proto__', 'tg.constructor']);
    expect(Object.getOwnPropertyDescriptor(props, '__proto__')).toEqual({
      value: 'p',
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(JSON.parse(r.raw!.propsLong!), '__proto__')?.value).toBe(5);
    // Object.prototype was not polluted: the same own names, constructor still Object, no "p", 5 or "c" anywhere.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoNames);
    expect(Object.getPrototypeOf(Object.prototype)).toBeNull();
    expect(Object.prototype.constructor).toBe(Object);
    const fresh = {} as Record<string, unknown>;
    expect(Object.getPrototypeOf(fresh)).toBe(Object.prototype);
    expect(fresh.constructor).toBe(Object);
    expect([fresh.p, fresh.prototype, fresh.t, fresh.u, fresh['tg.__proto__']]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('normalizeEvent: $tg promotion', () => {
  it('promotes registry keys of platform events from the right bucket', () => {
    const r = run({
      eventOrigin: 'platform',
      propsString: { 'tg.currency': 'USD', 'tg.unknown_field': 'x', 'tg.message_id': '5' },
      propsLong: { 'tg.total_amount': 500, 'tg.chat_id': 1, 'tg.message_id': 2 },
    });
    expect(r.ev?.tg).toEqual({ currency: 'USD', total_amount: 500, chat_id: 1, message_id: 2 });
    expect(r.ev?.propsString).toEqual({ 'tg.unknown_field': 'x', 'tg.message_id': '5' });
    expect(r.ev?.propsLong).toBeNull();
    expect(r.diags).toEqual([['warning', 'prop_type_mismatch', 'props_string.tg.message_id']]);
    expect(r.ev?.actionKey).toBe('message:1:2');
  });

  it('promotes nothing for custom events', () => {
    const r = run({ propsLong: { 'tg.total_amount': 500, 'tg.update_id': 9 } });
    expect(r.ev?.tg).toBeNull();
    expect(r.ev?.propsLong).toEqual({ 'tg.total_amount': 500, 'tg.update_id': 9 });
    expect(r.ev?.actionKey).toBeNull();
  });

  it('derives the action key: payment charge, then message, then update', () => {
    const pay = run({
      eventOrigin: 'platform',
      propsString: { 'tg.telegram_payment_charge_id': 'c1' },
      propsLong: { 'tg.update_id': 3, 'tg.chat_id': 1, 'tg.message_id': 2 },
    });
    expect(pay.ev?.actionKey).toBe('payment:c1');
    expect(run({ eventOrigin: 'platform', propsLong: { 'tg.update_id': 3 } }).ev?.actionKey).toBe('update:3');
    expect(run({ eventOrigin: 'platform', propsLong: { 'tg.chat_id': 3 } }).ev?.actionKey).toBeNull();
    expect(run({ eventOrigin: 'platform', propsString: { 'tg.constructor': 'x' } }).ev?.tg).toBeNull();
  });
});

describe('normalizeEvent: webapp', () => {
  it('needs no user id or origin, ignores floats, promotes nothing', () => {
    const r = run(
      {
        platformUserId: undefined,
        eventOrigin: undefined,
        propsFloat: { f: 1.5 },
        propsLong: { 'tg.total_amount': 1 },
      },
      'webapp',
    );
    expect(r.ev).toMatchObject({ origin: 'custom', propsFloat: null, tg: null, propsLong: { 'tg.total_amount': 1 } });
    expect(r.diags).toEqual([]);
  });

  it('treats a missing eventType as unknown', () => {
    const r = run({ eventType: undefined }, 'webapp');
    expect(r.ev?.eventType).toBe('platform');
    expect(r.diags).toEqual([['warning', 'event_type_unknown', 'event_type']]);
  });
});
