// The key per-client limits count under.
import { describe, expect, it } from 'vitest';
import { clientAddress, limitKey } from '../../../src/http/client-address.js';

describe('limitKey', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(limitKey('203.0.113.9')).toBe('203.0.113.9');
  });

  it("keys an IPv6 address by its /64, however it is written: a subscriber's every address is one client", () => {
    const key = '2001:db8:1:2::/64';
    for (const a of [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:a:b:c:d',
      '2001:db8:1:2::9%eth0',
      '2001:db8:1:2:0:0:1.2.3.4',
    ])
      expect(limitKey(a), a).toBe(key);
    expect(limitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(limitKey('::1')).toBe('0:0:0:0::/64');
  });

  it('keys an IPv4 client a dual-stack listener reports as IPv6 by its IPv4 address', () => {
    expect(limitKey('0000:0000:0000:0000:0000:ffff:7f00:0001')).toBe('127.0.0.1');
    expect(limitKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(limitKey('::ffff:cb00:7109')).toBe('203.0.113.9');
  });

  it('leaves what is no IP address as it is', () => {
    expect(limitKey('')).toBe('');
    expect(limitKey('not-an-ip')).toBe('not-an-ip');
  });
});

describe('clientAddress', () => {
  it("takes the proxy's last X-Forwarded-For entry only behind a trusted proxy, keyed as above", () => {
    expect(clientAddress('10.0.0.1', '198.51.100.7, 2001:db8:9:9::5', true)).toBe('2001:db8:9:9::/64');
    expect(clientAddress('10.0.0.1', '2001:db8:9:9::5', false)).toBe('10.0.0.1');
    expect(clientAddress('2001:db8::1', 'not an address', true)).toBe('2001:db8:0:0::/64');
  });
});
