import { describe, expect, it } from 'vitest';
import { classify } from '../../../src/writer/failure-policy.js';
import { ConnectionLost, PgError } from '../../../src/writer/wire.js';

const pg = (code: string, constraint?: string) => new PgError('x', code, constraint, undefined);

describe('classify', () => {
  it("backs off only for what is known to be the database's state", () => {
    for (const code of ['08006', '08001', '53100', '53200', '57P01', '57014', '58030', '25006'])
      expect(classify(pg(code)), code).toBe('unavailable');
    expect(classify(new ConnectionLost('gone'))).toBe('unavailable');
    expect(classify(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('unavailable');
  });

  it('takes any other SQLSTATE as data: the batch is split, not the writer stopped', () => {
    for (const code of ['54000', '22021', '23514', '42P01', 'XX000', '22P02', '2202E', '55P03'])
      expect(classify(pg(code)), code).toBe('data');
  });

  it('retries deadlocks and serialization failures, and redoes a batch that met stored events', () => {
    expect(classify(pg('40P01'))).toBe('retry');
    expect(classify(pg('40001'))).toBe('retry');
    expect(classify(pg('23505', 'events_2026_11_project_event_key'))).toBe('conflict');
    expect(classify(pg('23505', 'billing_actions_pkey'))).toBe('data');
  });
});
