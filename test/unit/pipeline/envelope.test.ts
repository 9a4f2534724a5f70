import { describe, expect, it } from 'vitest';
import { envelopeFromPrefix } from '../../../src/pipeline/envelope.js';

const BOT = '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b';
const limits = { maxDepth: 64 };
const read = (text: string) => envelopeFromPrefix(text, limits, 65536);

describe('envelopeFromPrefix', () => {
  it('reads botId and auth.initData before events, however long the rest, and stops there', () => {
    const text = `{ "botId" : "${BOT}",\n"auth":{"initData":"a=1&b=\\"2\\"","x":[1,{"y":"}"}]}, "events": [{"eventId": "`;
    expect(read(text)).toEqual({ ok: true, envelope: { botId: BOT, initData: 'a=1&b="2"' } });
  });

  it('skips other keys before the envelope, strings with brackets and escapes included', () => {
    const text = `{"version":"1","pad":["]\\"[",{"a":{"b":[true,null,-1.5e3]}}],"auth":{"initData":"q"},"botId":"${BOT}","events":[`;
    expect(read(text)).toEqual({ ok: true, envelope: { botId: BOT, initData: 'q' } });
  });

  it('an object that ends within the prefix: what it lacks is missing, as in a short body', () => {
    expect(read(`{"botId":"${BOT}"}   trailing`)).toEqual({ ok: true, envelope: { botId: BOT, initData: null } });
    expect(read(`{"auth":{"initData":"q"}}`)).toMatchObject({ ok: false, refusal: { code: 'bot_id_invalid' } });
  });

  it('refuses a body whose envelope does not come first within the prefix', () => {
    for (const text of [
      `{"events":[{"eventId":"x"},{"eventId":"y"`,
      `{"botId":"${BOT}","events":[1,2,3`,
      `{"botId":"${BOT}","auth":{"initData":"unfinished`,
      '   ',
      '{"bot',
    ]) {
      expect(read(text), text).toMatchObject({
        ok: false,
        refusal: { code: 'invalid_body', details: { envelopeMaxBytes: 65536 } },
      });
    }
  });

  it('refuses what is not a JSON object, and syntax it meets on the way', () => {
    expect(read('[1,2,3,')).toMatchObject({ ok: false, refusal: { code: 'invalid_body' } });
    for (const text of ['{botId:1}', `{"botId" "${BOT}"`, `{"botId":"${BOT}" "auth":{}}`, '{"a":"\u0001"}']) {
      expect(read(text), text).toMatchObject({ ok: false, refusal: { code: 'invalid_json' } });
    }
  });

  it('refuses nesting deeper than MAX_JSON_DEPTH in what it reads or skips', () => {
    const deep = (k: number) => `${'['.repeat(k)}${']'.repeat(k)}`;
    expect(read(`{"pad":${deep(63)},"botId":"${BOT}","auth":{"initData":"q"}}`)).toMatchObject({ ok: true });
    expect(read(`{"pad":${deep(64)},"botId":"${BOT}"`)).toMatchObject({
      ok: false,
      refusal: { code: 'invalid_json', details: { maxDepth: 64 } },
    });
    expect(read(`{"botId":"${BOT}","auth":{"initData":"q","x":${deep(63)}}}`)).toMatchObject({
      ok: false,
      refusal: { code: 'invalid_json' },
    });
    expect(read(deep(200_000).slice(0, 65536))).toMatchObject({ ok: false, refusal: { code: 'invalid_json' } });
  });

  it('takes the last of repeated keys, as JSON.parse does', () => {
    const other = '1b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b';
    expect(read(`{"botId":"${other}","botId":"${BOT}","auth":{"initData":"q"},"events":[`)).toEqual({
      ok: true,
      envelope: { botId: BOT, initData: 'q' },
    });
  });
});
