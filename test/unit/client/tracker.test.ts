// The bot tracker's promises to the bot: a bounded queue that drops the oldest, failures that go back to the queue
// with their ids, profiles once per user per interval, and nothing thrown into the bot. A fetch stand-in answers
// like the service; the real frameworks and service are in test/e2e/frameworks.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { updateEventId, updateNamespace } from '../../../client/src/updates/ids.js';
import { BotTracker, type BotTrackerOptions } from '../../../client/src/updates/tracker.js';

const BOT = { id: 4242, first_name: 'Shop' };
const NS = updateNamespace('tgk_x');

interface Sent {
  events: { eventId: string; eventName: string; platformUserId: string }[];
  users?: { messengerUserId: number }[];
  bot?: { name: string };
}

/** Answers 202 for every event, or fails while `down` (no answer, like a stopped service). */
function service() {
  const sent: Sent[] = [];
  const state = { down: false };
  const fetch = (async (_url: string, init: RequestInit) => {
    if (state.down) throw new TypeError('fetch failed: connect ECONNREFUSED');
    const body = JSON.parse(String(new TextDecoder().decode(init.body as Uint8Array))) as Sent;
    sent.push(body);
    const json = {
      accepted: body.events.length,
      rejected: 0,
      not_consumed_duplicated: 0,
      stored_not_billed: 0,
      diagnostics_truncated: false,
      diagnostics: [],
    };
    return new Response(JSON.stringify(json), { status: 202, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { sent, state, fetch };
}

const message = (updateId: number, userId = 1001) => ({
  update_id: updateId,
  message: {
    message_id: updateId,
    from: { id: userId, is_bot: false, first_name: 'Ada', username: `u${userId}` },
    chat: { id: userId, type: 'private' },
    date: 1_764_000_000,
    text: 'hi',
  },
});

const trackers: BotTracker[] = [];
function tracker(opts: Partial<BotTrackerOptions> & Pick<BotTrackerOptions, 'fetch'>): BotTracker {
  const t = new BotTracker({ baseUrl: 'http://ingest.test', apiKey: 'tgk_x', ...opts });
  trackers.push(t);
  return t;
}
afterEach(async () => {
  for (const t of trackers.splice(0)) await t.close();
});

describe('the bot tracker', () => {
  it('keeps at most maxQueuedEvents, dropping the oldest and counting them', async () => {
    const s = service();
    const t = tracker({ fetch: s.fetch, maxQueuedEvents: 3, flushIntervalMs: 60_000 });
    for (let i = 1; i <= 5; i++) t.observe(message(i), BOT);
    await t.flush();
    expect(t.stats.dropped).toBe(2);
    expect(s.sent.flatMap((b) => b.events.map((e) => e.eventId))).toEqual(
      [3, 4, 5].map((u) => updateEventId(NS, BOT.id, u, 0)),
    );
  });

  it('puts events of a failed delivery back in the queue with their ids, and sends them once the service answers', async () => {
    const s = service();
    const t = tracker({ fetch: s.fetch, maxRetries: 0, flushIntervalMs: 10 });
    s.state.down = true;
    t.observe(message(7), BOT);
    await t.flush();
    expect(s.sent).toEqual([]);
    expect(t.pending).toBe(1);
    s.state.down = false;
    const until = Date.now() + 5000;
    while (s.sent.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(s.sent[0]!.events.map((e) => e.eventId)).toEqual([updateEventId(NS, BOT.id, 7, 0)]);
    expect(t.stats).toMatchObject({ failed: 0, dropped: 0 });
  });

  it('sends a user profile once per interval, and the bot snapshot once', async () => {
    const s = service();
    const t = tracker({ fetch: s.fetch, flushIntervalMs: 60_000 });
    t.observe(message(1, 1001), BOT);
    t.observe(message(2, 1001), BOT);
    t.observe(message(3, 1002), BOT);
    await t.flush();
    t.observe(message(4, 1001), BOT);
    await t.flush();
    expect(s.sent.map((b) => (b.users ?? []).map((u) => u.messengerUserId))).toEqual([[1001, 1002], []]);
    expect(s.sent.map((b) => b.bot?.name ?? null)).toEqual(['Shop', null]);
  });

  it('derives ctx.track ids from the update, after its own events', async () => {
    const s = service();
    const t = tracker({ fetch: s.fetch, flushIntervalMs: 60_000 });
    const track = t.observe(message(9), BOT);
    track('added_to_cart', { qty: 1 });
    track('checkout');
    await t.flush();
    expect(s.sent[0]!.events.map((e) => [e.eventId, e.eventName, e.platformUserId])).toEqual([
      [updateEventId(NS, BOT.id, 9, 0), 'message', '1001'],
      [updateEventId(NS, BOT.id, 9, 1, 'added_to_cart'), 'added_to_cart', '1001'],
      [updateEventId(NS, BOT.id, 9, 2, 'checkout'), 'checkout', '1001'],
    ]);
  });

  it('never throws into the bot: not for a malformed update, an unencodable property or a throwing onError', () => {
    const s = service();
    const t = tracker({
      fetch: s.fetch,
      flushIntervalMs: 60_000,
      onError: () => {
        throw new Error('the bot author made a mistake');
      },
    });
    expect(() => t.observe(null as never, BOT)).not.toThrow();
    const track = t.observe(message(1), BOT);
    expect(() => track('weird', { big: 10n as never })).not.toThrow();
  });
});
