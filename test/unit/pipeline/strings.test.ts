import { describe, expect, it } from 'vitest';
import { displayKey, repairString, truncateCodePoints } from '../../../src/pipeline/strings.js';

describe('repairString', () => {
  it('leaves clean strings alone, emoji included', () => {
    expect(repairString('héllo 👋')).toEqual({ value: 'héllo 👋', nulRemoved: false, unicodeRepaired: false });
  });
  it('removes NUL', () => {
    expect(repairString('a\u0000b\u0000')).toEqual({ value: 'ab', nulRemoved: true, unicodeRepaired: false });
  });
  it('replaces unpaired surrogates', () => {
    expect(repairString('x\uD800y\uDC00')).toEqual({
      value: 'x\uFFFDy\uFFFD',
      nulRemoved: false,
      unicodeRepaired: true,
    });
  });
});

describe('truncateCodePoints', () => {
  it('returns null when the string fits', () => {
    expect(truncateCodePoints('abc', 3)).toBeNull();
    expect(truncateCodePoints('👋👋', 2)).toBeNull();
  });
  it('counts code points and never splits a pair', () => {
    expect(truncateCodePoints('abcd', 3)).toBe('abc');
    expect(truncateCodePoints('a👋b', 2)).toBe('a👋');
    expect(truncateCodePoints('👋'.repeat(5000), 4096)).toBe('👋'.repeat(4096));
  });
});

describe('displayKey', () => {
  it('cuts long keys and keeps them printable', () => {
    expect(displayKey('k'.repeat(100))).toBe(`${'k'.repeat(64)}…`);
    expect(displayKey('a\u0000b')).toBe('ab');
  });
});
