import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isTokenShaped, TokenTags } from '../../../src/auth/api-tokens.js';

describe('token tags', () => {
  const tags = new TokenTags(randomBytes(32));

  it('issues tokens of the one shape, each carrying its tag', () => {
    const tokens = Array.from({ length: 100 }, () => tags.issue());
    for (const t of tokens) {
      expect(isTokenShaped(t)).toBe(true);
      expect(tags.carries(t)).toBe(true);
    }
    expect(new Set(tokens).size).toBe(100);
  });

  it('finds no tag on made-up keys, altered tokens, or tokens of another deployment', () => {
    expect(
      Array.from({ length: 1000 }, () => `tgk_${randomBytes(32).toString('base64url')}`).filter((t) => tags.carries(t)),
    ).toEqual([]);
    const t = tags.issue();
    // One character changed in the random part, then in the tag.
    for (const at of [6, 40]) {
      const altered = t.slice(0, at) + (t[at] === 'A' ? 'B' : 'A') + t.slice(at + 1);
      expect(tags.carries(altered)).toBe(false);
    }
    expect(new TokenTags(randomBytes(32)).carries(t)).toBe(false);
  });
});
