// The address per-client limits count under, and the /64 failure budgets also count an IPv6 client in.
import { describe, expect, it } from 'vitest';
import { canonical, clientAddress, prefix64 } from '../../../src/base/client-address.js';

describe('canonical', () => {
  it('keeps IPv4 and IPv6 addresses as they are', () => {
    expect(canonical('203.0.113.9')).toBe('203.0.113.9');
    expect(canonical('2001:db8::1')).toBe('2001:db8::1');
  });

  it('takes an IPv4 address carried in IPv6 for the IPv4 address, in every form IPv6 carries one', () => {
    // As a dual-stack uWS listener reports an IPv4 client.
    expect(canonical('0000:0000:0000:0000:0000:ffff:7f00:0001')).toBe('127.0.0.1');
    expect(canonical('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(canonical('0:0:0:0:0:ffff:cb00:7109')).toBe('203.0.113.9');
    expect(canonical('::ffff:0:203.0.113.9')).toBe('203.0.113.9');
    expect(canonical('64:ff9b::203.0.113.9')).toBe('203.0.113.9');
    expect(canonical('::203.0.113.9')).toBe('203.0.113.9');
    // The loopback and unspecified addresses are no IPv4 addresses.
    expect(canonical('::1')).toBe('::1');
    expect(canonical('::')).toBe('::');
  });

  it('leaves what is no IP address as it is', () => {
    expect(canonical('')).toBe('');
    expect(canonical('not-an-ip')).toBe('not-an-ip');
  });
});

describe('prefix64', () => {
  it('is the /64 of an IPv6 address, however it is written', () => {
    for (const a of [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:a:b:c:d',
      '2001:db8:1:2::9%eth0',
      '2001:db8:1:2:0:0:1.2.3.4',
    ])
      expect(prefix64(a), a).toBe('2001:db8:1:2::/64');
    expect(prefix64('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
  });

  it('is none for IPv4, and for IPv4 carried in IPv6: IPv4 clients are never counted together', () => {
    for (const a of [
      '203.0.113.9',
      '::ffff:203.0.113.9',
      '0000:0000:0000:0000:0000:ffff:7f00:0001',
      '64:ff9b::1.2.3.4',
    ])
      expect(prefix64(a), a).toBeNull();
  });
});

describe('clientAddress', () => {
  it("takes the proxy's last X-Forwarded-For entry only behind a trusted proxy", () => {
    expect(clientAddress('10.0.0.1', '198.51.100.7, 2001:db8:9:9::5', true)).toBe('2001:db8:9:9::5');
    expect(clientAddress('10.0.0.1', '::ffff:198.51.100.7', true)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.1', '2001:db8:9:9::5', false)).toBe('10.0.0.1');
    expect(clientAddress('2001:db8::1', 'not an address', true)).toBe('2001:db8::1');
  });
});
