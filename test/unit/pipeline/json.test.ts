import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeJson, inflatePrefix } from '../../../src/pipeline/decode.js';
import { deeperThan } from '../../../src/pipeline/json.js';

const nested = (k: number) => JSON.parse(`${'['.repeat(k)}${']'.repeat(k)}`) as unknown;

describe('deeperThan', () => {
  it('counts a container as one level, scalars as none', () => {
    expect(deeperThan(1, 0)).toBe(false);
    expect(deeperThan([], 0)).toBe(true);
    expect(deeperThan([], 1)).toBe(false);
    expect(deeperThan(nested(64), 64)).toBe(false);
    expect(deeperThan(nested(65), 64)).toBe(true);
    expect(deeperThan({ a: 1, b: { c: [1, { d: [] }] } }, 5)).toBe(false);
    expect(deeperThan({ a: 1, b: { c: [1, { d: [[]] }] } }, 5)).toBe(true);
  });

  it('finds depth hidden anywhere, even under __proto__, without a stack overflow at 300,000', () => {
    expect(deeperThan(JSON.parse(`{"__proto__":${'['.repeat(70)}${']'.repeat(70)}}`), 64)).toBe(true);
    expect(deeperThan(nested(300_000), 64)).toBe(true);
  });
});

describe('decodeJson', () => {
  it('refuses nesting past maxDepth with invalid_json naming the limit', () => {
    const text = Buffer.from(`{"events":${'['.repeat(70)}${']'.repeat(70)}}`);
    expect(decodeJson(text, false, { maxBytes: 1e6, maxDepth: 64 })).toMatchObject({
      ok: false,
      refusal: { code: 'invalid_json', details: { maxDepth: 64 } },
    });
    expect(decodeJson(text, false, { maxBytes: 1e6, maxDepth: 80 })).toMatchObject({ ok: true });
  });
});

describe('inflatePrefix', () => {
  it('inflates a whole small body, and only the first bytes of a bomb', async () => {
    const small = gzipSync('{"botId":"x"}');
    expect(await inflatePrefix(small, 1024, true)).toMatchObject({ ok: true, complete: true });
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    const r = await inflatePrefix(bomb, 65536, true);
    expect(r.ok && r.bytes.length === 65536 && !r.complete).toBe(true);
  });

  it('a cut compressed prefix is not an error; broken gzip is', async () => {
    const body = gzipSync(Buffer.from(JSON.stringify({ pad: 'x'.repeat(100_000) })).toString('base64'));
    const cut = await inflatePrefix(body.subarray(0, Math.floor(body.length / 2)), 1 << 20, false);
    expect(cut.ok && !cut.complete && cut.bytes.length > 0).toBe(true);
    expect(await inflatePrefix(Buffer.from('not gzip'), 1024, true)).toMatchObject({
      ok: false,
      refusal: { code: 'invalid_gzip' },
    });
  });
});
