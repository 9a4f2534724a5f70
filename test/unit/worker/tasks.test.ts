import { describe, expect, it } from 'vitest';
import { serve, type Task } from '../../../src/worker/tasks.js';

const ctx = {
  projectId: '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
  botId: '1b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
  receivedAt: '2026-11-24T10:00:00.000Z',
  channel: 'bot_api' as const,
  connection: 'token:x',
  userId: null,
};
const limits = { maxBytes: 1 << 20, maxDepth: 64, maxProfiles: 1000 };
const body = (events: unknown[]) => Buffer.from(JSON.stringify({ events }));
const event = {
  eventId: '2b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
  eventName: 'n',
  eventDate: '2026-11-24T10:00:00Z',
  eventType: 'message',
  eventOrigin: 'custom',
  platformUserId: '1',
};

describe('serve', () => {
  it('gives each task of a group its own fate: one that throws answers alone', () => {
    const good: Task = { kind: 'bot_api', body: body([event]), gzip: false, limits, ctx };
    // A plan reference that is not JSON makes this task throw (what a bug would do).
    const broken: Task = {
      kind: 'bot_api',
      body: body([event]),
      gzip: false,
      limits,
      ctx: { ...ctx, plan: { key: 'broken:1', source: '{not json' } },
    };
    const r = serve({ kind: 'group', tasks: [good, broken, good] }) as { results: unknown[] };
    expect(r.results).toHaveLength(3);
    expect(r.results[0]).toMatchObject({ ok: true, batch: { accepted: 1 } });
    expect(r.results[1]).toMatchObject({ failed: expect.any(String), byInput: false });
    expect(r.results[2]).toMatchObject({ ok: true, batch: { accepted: 1 } });
  });
});
