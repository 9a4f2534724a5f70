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

  it("counts an IPv6 client's /64 as one address, whichever of its addresses it sends from", () => {
    const share = new AddressShare(2);
    const claims = ['2001:db8:1:2::1', '2001:db8:1:2:ffff::7', '2001:db8:1:2::1'].map((a) => share.claim(a));
    expect(claims.map((c) => c.take())).toEqual([true, true, false]);
    // Another /64 and an IPv4 address (IPv4 carried in IPv6 arrives as IPv4: client-address.ts) have shares of their own.
    expect(['2001:db8:1:3::1', '2001:db8:1:3::2', '2001:db8:1:3::3'].map((a) => share.claim(a).take())).toEqual([
      true,
      true,
      false,
    ]);
    expect(['192.0.2.1', '192.0.2.1', '192.0.2.1'].map((a) => share.claim(a).take())).toEqual([true, true, false]);
    claims[0]!.release();
    expect(share.claim('2001:db8:1:2:0:0:0:9').take()).toBe(true);
  });
});
