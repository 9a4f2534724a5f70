import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, MESSENGER_PRODUCTION_KEY, readConfig } from '../../src/config/config.js';

describe('readConfig', () => {
  it('trusts a development key file named by INITDATA_DEV_KEY_FILE, with or without DATABASE_URL', () => {
    const c = readConfig({ DATABASE_URL: 'postgres://u:p@db:5432/x', INITDATA_DEV_KEY_FILE: '/tmp/k/dev.pem' });
    expect(c.initDataDevKeyFile).toBe('/tmp/k/dev.pem');
  });

  it('applies the documented defaults', () => {
    const c = readConfig({});
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      databaseUrl: null,
      adminToken: null,
      initDataPublicKeys: [MESSENGER_PRODUCTION_KEY],
      initDataMaxAgeS: 900,
      rateLimitPerMin: 120,
      rateLimitBurst: 300,
      logLevel: 'info',
      maxBodyBytes: 32 * 1024 * 1024,
      corsAllowOrigins: ['*'],
    });
    expect(c.dataDir.endsWith('.data')).toBe(true);
    // The embedded database is a developer's machine: a development initData key in DATA_DIR.
    expect(c.initDataDevKeyFile).toBe(`${c.dataDir}/initdata-dev-key.pem`);
    expect(c.workers).toBe(availableParallelism());
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads every variable', () => {
    const c = readConfig({
      HOST: '127.0.0.1',
      PORT: '9000',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      DATA_DIR: '/tmp/d',
      ADMIN_TOKEN: 'a-long-enough-admin-token',
      WORKERS: '3',
      INITDATA_PUBLIC_KEYS: `${'AB'.repeat(32)}, ${'cd'.repeat(32)}`,
      INITDATA_MAX_AGE_S: '60',
      RATE_LIMIT_PER_MIN: '600',
      RATE_LIMIT_BURST: '10',
      LOG_LEVEL: 'debug',
      MAX_BODY_BYTES: '2048',
      CORS_ALLOW_ORIGINS: 'https://a.example, https://b.example',
    });
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 9000,
      databaseUrl: 'postgres://u:p@db:5432/x',
      dataDir: '/tmp/d',
      adminToken: 'a-long-enough-admin-token',
      workers: 3,
      // Added to the messenger's production key, never in its place.
      initDataPublicKeys: [MESSENGER_PRODUCTION_KEY, 'ab'.repeat(32), 'cd'.repeat(32)],
      // With DATABASE_URL, none unless INITDATA_DEV_KEY_FILE asks.
      initDataDevKeyFile: null,
      initDataMaxAgeS: 60,
      rateLimitPerMin: 600,
      rateLimitBurst: 10,
      logLevel: 'debug',
      maxBodyBytes: 2048,
      corsAllowOrigins: ['https://a.example', 'https://b.example'],
    });
  });

  it('takes WORKERS from 1 to 256 and says why it refuses another value', () => {
    expect(readConfig({ WORKERS: '1' }).workers).toBe(1);
    expect(readConfig({ WORKERS: '256' }).workers).toBe(256);
    expect(() => readConfig({ WORKERS: '0' })).toThrow(new ConfigError('WORKERS', 'must be between 1 and 256, got 0'));
    expect(() => readConfig({ WORKERS: '257' })).toThrow(
      new ConfigError('WORKERS', 'must be between 1 and 256, got 257'),
    );
    expect(() => readConfig({ WORKERS: 'x' })).toThrow(new ConfigError('WORKERS', 'must be an integer, got "x"'));
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['WORKERS', '0'],
    ['WORKERS', '257'],
    ['WORKERS', 'x'],
    ['INITDATA_PUBLIC_KEYS', 'abc'],
    ['INITDATA_MAX_AGE_S', '0'],
    ['INITDATA_MAX_AGE_S', '1.5'],
    ['RATE_LIMIT_PER_MIN', '-1'],
    ['RATE_LIMIT_BURST', 'x'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'not a url'],
    ['MAX_BODY_BYTES', '10'],
    ['ADMIN_TOKEN', 'short'],
    ['CORS_ALLOW_ORIGINS', 'example.com/path'],
    ['HOST', 'bad host'],
  ])('refuses %s=%s and names the variable', (name, value) => {
    let err: unknown;
    try {
      readConfig({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe(name);
    expect((err as Error).message.startsWith(`${name}:`)).toBe(true);
  });
});
