// What the bot_api client adds to the queue: profiles and the bot snapshot ride along with a batch, and wait for the
// next one when none of its requests got through.
import { describe, expect, it } from 'vitest';
import { BotApiClient, createClient, IngestClient } from '../../../client/src/index.js';
import { fakeFetch } from '../../helpers/client-fakes.js';

const ev = { eventName: 'start', eventType: 'message', eventOrigin: 'custom', platformUserId: '42' } as const;

describe('BotApiClient', () => {
  it('sends profiles and the bot snapshot with the next batch, and again with the one after when it was not delivered', async () => {
    const f = fakeFetch((_, n) =>
      n === 1 ? 'network_error' : { status: 202, body: { accepted: 1, rejected: 0, diagnostics: [] } },
    );
    const client = createClient({ baseUrl: 'https://ingest.test', apiKey: 'k', fetch: f.fetch, maxRetries: 0 });
    expect(client).toBeInstanceOf(BotApiClient);
    client.setProfile({ messengerUserId: 42, username: 'ada' });
    client.setBot({ name: 'Shop' });
    client.track(ev);
    expect((await client.flush()).failed).toBe(1);
    // Set meanwhile: merged, the newer value winning.
    client.setProfile({ messengerUserId: 42, firstName: 'Ada' });
    client.track(ev);
    expect((await client.close()).accepted).toBe(1);
    const bodies = f.requests.map((r) => r.body as { users?: unknown; bot?: unknown });
    expect(bodies[0]).toMatchObject({ users: [{ messengerUserId: 42, username: 'ada' }], bot: { name: 'Shop' } });
    expect(bodies[1]).toMatchObject({
      users: [{ messengerUserId: 42, username: 'ada', firstName: 'Ada' }],
      bot: { name: 'Shop' },
    });
    expect(f.requests).toHaveLength(2);
  });

  it('is the only client for apiKey: IngestClient alone refuses one', () => {
    expect(() => new IngestClient({ baseUrl: 'https://ingest.test', apiKey: 'k' })).toThrow(TypeError);
  });
});
