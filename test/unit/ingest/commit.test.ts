// The commit step both endpoints share, with an in-memory EventSink: what reaches the writer, what
// the client is answered, and that what a request holds is given back whatever happens.
import { describe, expect, it } from 'vitest';
import { commitBatch, type CommitDeps } from '../../../src/ingest/commit.js';
import { BodyBudget, DerivedBytes } from '../../../src/limits/body-budget.js';
import { processBotApiBatch } from '../../../src/pipeline/batch.js';
import { type EventSink, WriteError, type WriteOutcome, type WriteRequest } from '../../../src/writer/sink.js';

const P = '0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b';
const ctx = {
  projectId: P,
  botId: '1b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
  receivedAt: '2026-11-24T10:00:00.000Z',
  channel: 'bot_api' as const,
  connection: 'token:t',
  userId: null,
};
const target = {
  channel: 'bot_api' as const,
  projectId: P,
  botId: ctx.botId,
  connection: 'token:t',
  receivedAt: ctx.receivedAt,
  authoritativeProfiles: false,
};
const event = (over: Record<string, unknown> = {}) => ({
  eventId: crypto.randomUUID(),
  eventName: 'n',
  eventDate: '2026-11-24T10:00:00Z',
  eventType: 'message',
  eventOrigin: 'custom',
  platformUserId: '1',
  ...over,
});
const batchOf = (events: unknown[]) => {
  const r = processBotApiBatch({ events }, ctx);
  if (!r.ok) throw new Error('refused');
  return r.batch;
};

/** Records what it is given; answers with `answer` (an outcome per request, or an error). */
class MemorySink implements EventSink {
  readonly got: WriteRequest[] = [];
  constructor(private readonly answer: (r: WriteRequest) => WriteOutcome | Error) {}
  async submit(r: WriteRequest): Promise<WriteOutcome> {
    this.got.push(r);
    const a = this.answer(r);
    if (a instanceof Error) throw a;
    return a;
  }
  async drain() {}
  async close() {}
  get pending() {
    return 0;
  }
}

function deps(sink: EventSink, o: { quarantineRoom?: boolean; budget?: number } = {}) {
  const ledger = { reserved: 0, settled: 0, released: 0 };
  const budget = new BodyBudget(o.budget ?? 1 << 20);
  const dropped: number[] = [];
  const d: CommitDeps = {
    sink,
    derived: new DerivedBytes(budget),
    quota: {
      check: async () => undefined,
      reserve: async (projectId, events) => {
        ledger.reserved += events;
        return { projectId, events };
      },
      settle: (_r, billed) => void (ledger.settled += billed),
      release: (r) => void (ledger.released += r.events),
    },
    quarantineBudget: { admit: async () => o.quarantineRoom ?? true, drop: (_p, n) => void dropped.push(n) },
  };
  return { d, ledger, budget, dropped };
}

describe('commitBatch', () => {
  it("hands the writer the pipeline's batch itself, and answers 202 with what was stored", async () => {
    const sink = new MemorySink((r) => ({
      stored: r.batch.rowCount,
      billed: r.batch.rowCount - 1,
      storedNotBilled: 1,
      redelivered: 0,
    }));
    const { d, ledger, budget } = deps(sink);
    const batch = batchOf([event(), event()]);
    const reply = await commitBatch(d, batch, target);
    expect(reply).toMatchObject({ status: 202, body: { accepted: 2, stored_not_billed: 1 } });
    expect(sink.got[0]!.batch).toBe(batch);
    expect(sink.got[0]!.target).toBe(target);
    expect(ledger).toEqual({ reserved: 2, settled: 1, released: 0 });
    expect(budget.bytes).toBe(0);
  });

  it('a batch rejected whole and kept nowhere never reaches the writer: 400 with the normal body', async () => {
    const sink = new MemorySink(() => new Error('not called'));
    const { d } = deps(sink, { quarantineRoom: false });
    const reply = await commitBatch(d, batchOf([event({ eventDate: 'bad' })]), target);
    expect(reply).toMatchObject({ status: 400, body: { accepted: 0, rejected: 1 } });
    expect(reply.body).toMatchObject({ diagnostics: [{ code: 'quarantine_full' }, { code: 'event_date_invalid' }] });
    expect(sink.got).toEqual([]);
  });

  it('past QUARANTINE_MAX_BYTES the rejected events are dropped and counted; the accepted ones are stored', async () => {
    const sink = new MemorySink((r) => ({
      stored: r.batch.rowCount,
      billed: r.batch.rowCount,
      storedNotBilled: 0,
      redelivered: 0,
    }));
    const { d, dropped } = deps(sink, { quarantineRoom: false });
    const reply = await commitBatch(
      d,
      batchOf([event(), event({ eventDate: 'bad' }), event({ eventDate: 'bad' })]),
      target,
    );
    expect(reply.status).toBe(202);
    expect(sink.got[0]!.batch.quarantineCount).toBe(0);
    expect(dropped).toEqual([2]);
  });

  it('gives back what it holds when the writer fails, and says overloaded past the budget', async () => {
    const failing = new MemorySink(() => new WriteError('unavailable', 'down'));
    const { d, ledger, budget } = deps(failing);
    await expect(commitBatch(d, batchOf([event()]), target)).rejects.toBeInstanceOf(WriteError);
    expect([ledger.released, budget.bytes]).toEqual([1, 0]);
    const tiny = deps(new MemorySink(() => new Error('not called')), { budget: 10 });
    await expect(commitBatch(tiny.d, batchOf([event()]), target)).rejects.toMatchObject({ code: 'overloaded' });
  });
});
