import { describe, expect, it } from 'vitest';
import { AddressShare } from '../../../src/auth/address-share.js';

describe('AddressShare', () => {
  it("counts each address's work up to its share, apart from other addresses, and frees it as the work ends", () => {
    const share = new AddressShare(2);
    expect([share.enter('a'), share.enter('a'), share.enter('a')]).toEqual([true, true, false]);
    // Another address has its own share.
    expect(share.enter('b')).toBe(true);
    share.leave('a');
    expect([share.enter('a'), share.enter('a')]).toEqual([true, false]);
    share.leave('a');
    share.leave('a');
    // Back to nothing held: the whole share again.
    expect([share.enter('a'), share.enter('a'), share.enter('a')]).toEqual([true, true, false]);
  });

  it('holds one place per request however often it is taken, lets it go once, and takes none from a full share', () => {
    const share = new AddressShare(1);
    const first = share.claim('a');
    expect([first.take(), first.take()]).toEqual([true, true]);
    const second = share.claim('a');
    expect(second.take()).toBe(false);
    second.release();
    first.release();
    first.release();
    expect([second.take(), share.enter('a')]).toEqual([true, false]);
  });
});
