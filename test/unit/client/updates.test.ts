// The shared update table: ids that survive redelivery, and events whose every tg.* key the service promotes.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha1, updateEventId, updateNamespace, uuidv5 } from '../../../client/src/updates/ids.js';
import { mapUpdate, UPDATE_TYPES, type Update } from '../../../client/src/updates/mapping.js';
import { TG_REGISTRY } from '../../../src/pipeline/registry.js';
import { EXPECTED, FIXTURES } from '../../fixtures/updates.js';

const BUCKET = { string: 'propsString', long: 'propsLong', float: 'propsFloat', bool: 'propsBool' } as const;

describe('update ids', () => {
  it('are the UUIDv5 of RFC 9562 (its example: www.example.com in the DNS namespace)', () => {
    expect(uuidv5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });

  it('hash like SHA-1 at every length across the padding boundaries', () => {
    for (let n = 0; n < 200; n++) {
      const data = randomBytes(n);
      expect(Buffer.from(sha1(data)).toString('hex')).toBe(createHash('sha1').update(data).digest('hex'));
    }
  });

  it('depend on the secret, the bot, the update, the index and a custom event name, and on nothing else', () => {
    const ns = updateNamespace('tgk_secret');
    const id = updateEventId(ns, 123, 456, 0);
    expect(updateEventId(updateNamespace('tgk_secret'), 123, 456, 0)).toBe(id);
    const others = [
      updateEventId(updateNamespace('tgk_other'), 123, 456, 0),
      updateEventId(ns, 124, 456, 0),
      updateEventId(ns, 123, 457, 0),
      updateEventId(ns, 123, 456, 1),
      updateEventId(ns, 123, 456, 0, 'checkout'),
    ];
    expect(new Set([id, ...others]).size).toBe(6);
  });
});

describe('the update table', () => {
  it('has a fixture for every type it maps', () => {
    const covered = new Set(Object.values(FIXTURES).map((u) => Object.keys(u).find((k) => k !== 'update_id')));
    expect(Object.keys(UPDATE_TYPES).filter((t) => !covered.has(t))).toEqual([]);
    expect(Object.keys(EXPECTED).sort()).toEqual(Object.keys(FIXTURES).sort());
  });

  for (const [name, update] of Object.entries(FIXTURES)) {
    it(`maps ${name} to what the table says, every tg.* key registered in its bucket`, () => {
      const [event, ...more] = mapUpdate(update);
      expect(more).toEqual([]);
      const want = EXPECTED[name]!;
      expect([event!.eventType, event!.eventName]).toEqual([want.type, want.name]);
      const flat: Record<string, unknown> = {};
      for (const bucket of ['propsString', 'propsLong', 'propsBool'] as const) {
        for (const [k, v] of Object.entries(event![bucket])) {
          expect(k.startsWith('tg.'), `${k} has no tg. prefix`).toBe(true);
          const field = k.slice(3);
          const type = TG_REGISTRY[field];
          expect(type, `tg.${field} is not in the service's registry: it would stay flat`).toBeDefined();
          expect(BUCKET[type!], `tg.${field} sent in ${bucket}`).toBe(bucket);
          flat[field] = v;
        }
      }
      expect(flat).toMatchObject({ update_id: update.update_id, ...want.tg });
      expect(event!.text).toBeUndefined();
    });
  }

  it('names the person: from, the poll voter, the reactor, the booster; nobody for channel posts and poll states', () => {
    const who = (n: string) => mapUpdate(FIXTURES[n]!)[0]!.user?.id ?? null;
    expect(who('message')).toBe(5550001);
    expect(who('poll_answer')).toBe(5550002);
    expect(who('message_reaction')).toBe(5550002);
    expect(who('chat_boost')).toBe(5550001);
    expect(who('business_connection')).toBe(5550001);
    expect(who('channel_post')).toBeNull();
    expect(who('poll')).toBeNull();
  });

  it('sends text only with captureText: messages, captions and inline queries', () => {
    const t = (n: string) => mapUpdate(FIXTURES[n]!, { captureText: true })[0]!.text;
    expect(t('message')).toBe('hello there');
    expect(t('photo_with_caption')).toBe('look #sale');
    expect(t('inline_query')).toBe('red shoes');
    expect(mapUpdate(FIXTURES.callback_query!, { captureText: true })[0]!.text).toBeUndefined();
  });

  it('sends a /start payload only when it is shaped like a deep link, and only plausible dates', () => {
    const start = (text: string) =>
      mapUpdate({
        update_id: 1,
        message: { text, from: { id: 5 }, entities: [{ type: 'bot_command', offset: 0, length: 6 }], date: 2 ** 40 },
      } as Update)[0]!;
    expect(start('/start spring-sale_2').propsString['tg.start_param']).toBe('spring-sale_2');
    expect(start('/start my phone is 555 1234').propsString['tg.start_param']).toBeUndefined();
    expect(start(`/start ${'a'.repeat(65)}`).propsString['tg.start_param']).toBeUndefined();
    expect(start('/start x').date).toBeNull();
  });

  it('bills an edit, a reaction and a button press as their own updates, not as the message they refer to', () => {
    for (const n of ['edited_message', 'message_reaction', 'callback_query']) {
      expect(mapUpdate(FIXTURES[n]!)[0]!.propsLong['tg.message_id'], n).toBeUndefined();
    }
  });

  it('reads inherited names as unknown types, and a payload of the wrong shape as empty', () => {
    expect(mapUpdate({ update_id: 1, constructor: { from: { id: 7 } } } as Update)[0]).toMatchObject({
      eventType: 'platform',
      eventName: 'constructor',
      user: { id: 7 },
    });
    expect(mapUpdate({ update_id: 2, message: 'not an object' } as Update)[0]).toMatchObject({
      eventType: 'message',
      user: null,
    });
    expect(mapUpdate({ update_id: 3 } as Update)).toEqual([]);
  });
});
