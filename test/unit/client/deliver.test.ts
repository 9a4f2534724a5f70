// How the client turns answers into a fate per event, against a fake `post` that answers like the
// service: unnamed rejections are named by resending halves, and on bot_api a whole-request `event_invalid`
// refusal costs only the event it names.
import { describe, expect, it } from 'vitest';
import { deliverBotApi } from '../../../client/src/bot-api.js';
import { deliver, type Post } from '../../../client/src/deliver.js';
import { IngestError } from '../../../client/src/errors.js';
import type { SendResult } from '../../../client/src/transport.js';
import type { Diagnostic, IngestResponse, Stamped } from '../../../client/src/types.js';

type Ev = { eventName: string; eventOrigin?: string };

const events = (n: number): Stamped<Ev>[] =>
  Array.from({ length: n }, (_, i) => ({
    eventId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    eventDate: '2026-01-31T12:00:00Z',
    eventName: `e${i}`,
  }));

const ok = (body: Partial<IngestResponse>, status = 202): SendResult => ({
  ok: true,
  status,
  attempts: 1,
  retries: 0,
  body: {
    accepted: 0,
    rejected: 0,
    not_consumed_duplicated: 0,
    stored_not_billed: 0,
    diagnostics_truncated: false,
    diagnostics: [],
    ...body,
  },
});

const diag = (eventId: string | null, code: string, severity: 'error' | 'warning'): Diagnostic => ({
  event_id: eventId,
  code,
  severity,
  path: 'event',
  message: code,
});

/** Records the ids of every request and answers with `answer`. */
function fakePost(answer: (evs: Stamped<Ev>[]) => SendResult) {
  const posted: string[][] = [];
  const post: Post<Ev> = async (evs) => {
    posted.push(evs.map((e) => e.eventName));
    return answer(evs);
  };
  return { post, posted };
}

/** A server that rejects `bad` without naming them (its diagnostics list was cut), 400 when all are bad. */
const unnamedRejections = (bad: Set<string>) => (evs: Stamped<Ev>[]) => {
  const rejected = evs.filter((e) => bad.has(e.eventName)).length;
  return ok(
    { accepted: evs.length - rejected, rejected, diagnostics_truncated: rejected > 0 },
    rejected === evs.length ? 400 : 202,
  );
};

describe('deliver', () => {
  it('settles a plain 202 in one request', async () => {
    const { post, posted } = fakePost((evs) => ok({ accepted: evs.length, stored_not_billed: 1 }));
    const out = await deliver(events(3), post);
    expect(out).toEqual({
      accepted: 3,
      duplicated: 0,
      storedNotBilled: 1,
      requests: 1,
      retries: 0,
      rejected: [],
      failed: [],
      warnings: { events: [], diagnostics: [] },
    });
    expect(posted).toEqual([['e0', 'e1', 'e2']]);
  });

  it('names unnamed rejections by resending halves, and only those', async () => {
    const { post, posted } = fakePost(unnamedRejections(new Set(['e2', 'e5'])));
    const evs = events(7);
    const out = await deliver(evs, post);
    expect(out.rejected).toEqual([
      { event: evs[2], diagnostics: [] },
      { event: evs[5], diagnostics: [] },
    ]);
    expect(out.accepted).toBe(5);
    expect(out.failed).toEqual([]);
    expect(out.requests).toBe(11);
    // The larger half first; a half without rejections costs one request.
    expect(posted).toEqual([
      ['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6'],
      ['e0', 'e1', 'e2', 'e3'],
      ['e0', 'e1'],
      ['e2', 'e3'],
      ['e2'],
      ['e3'],
      ['e4', 'e5', 'e6'],
      ['e4', 'e5'],
      ['e4'],
      ['e5'],
      ['e6'],
    ]);
  });

  it('needs no further request when the unnamed rejections are all the unnamed events', async () => {
    const evs = events(3);
    const { post, posted } = fakePost(() =>
      ok({ accepted: 0, rejected: 3, diagnostics: [diag(evs[0]!.eventId, 'event_date_invalid', 'error')] }, 400),
    );
    const out = await deliver(evs, post);
    expect(out.rejected).toEqual([
      { event: evs[0], diagnostics: [diag(evs[0]!.eventId, 'event_date_invalid', 'error')] },
      { event: evs[1], diagnostics: [] },
      { event: evs[2], diagnostics: [] },
    ]);
    expect(posted).toHaveLength(1);

    // e0 named (ids compare case-insensitively), e1 rejected unnamed: one among two others, halves name it.
    const partial = fakePost((batch) => {
      const rejected = batch.filter((e) => e.eventName === 'e0' || e.eventName === 'e1').length;
      const diagnostics = batch.some((e) => e.eventName === 'e0')
        ? [diag(evs[0]!.eventId.toUpperCase(), 'event_date_invalid', 'error')]
        : [];
      return ok({ accepted: batch.length - rejected, rejected, diagnostics }, rejected === batch.length ? 400 : 202);
    });
    const out2 = await deliver(evs, partial.post);
    expect(out2.rejected).toEqual([
      { event: evs[0], diagnostics: [diag(evs[0]!.eventId.toUpperCase(), 'event_date_invalid', 'error')] },
      { event: evs[1], diagnostics: [] },
    ]);
    expect(out2.accepted).toBe(1);
    expect(partial.posted).toEqual([['e0', 'e1', 'e2'], ['e1'], ['e2']]);
  });

  it('separates warnings from rejections, named or not', async () => {
    const evs = events(3);
    const warn = diag(evs[1]!.eventId, 'event_type_unknown', 'warning');
    const both = [
      diag(evs[2]!.eventId, 'text_truncated', 'warning'),
      diag(evs[2]!.eventId, 'event_date_invalid', 'error'),
    ];
    const unnamed = diag(null, 'user_profile_invalid', 'warning');
    const { post } = fakePost(() => ok({ accepted: 2, rejected: 1, diagnostics: [warn, ...both, unnamed] }));
    const out = await deliver(evs, post);
    expect(out.rejected).toEqual([{ event: evs[2], diagnostics: both }]);
    expect(out.warnings).toEqual({ events: [evs[1]], diagnostics: [warn, unnamed] });
    expect(out.requests).toBe(1);
  });

  it('reports the event a whole-request event_invalid refusal names, and delivers the others', async () => {
    const evs = events(5).map((e, i) => (i === 1 || i === 3 ? e : { ...e, eventOrigin: 'custom' }));
    const { post, posted } = fakePost((batch) => {
      const index = batch.findIndex((e) => e.eventOrigin === undefined);
      if (index < 0) return ok({ accepted: batch.length });
      const error = new IngestError({
        code: 'event_invalid',
        status: 400,
        message: 'eventOrigin missing',
        details: { index, field: 'eventOrigin' },
        attempts: 1,
      });
      return { ok: false, error, attempts: 1, retries: 0 };
    });
    const out = await deliverBotApi(evs, post);
    expect(
      out.failed.map((f) => [
        f.events.map((e) => e.eventName),
        (f.error as IngestError).code,
        (f.error as IngestError).details,
      ]),
    ).toEqual([
      [['e1'], 'event_invalid', { index: 1, field: 'eventOrigin' }],
      [['e3'], 'event_invalid', { index: 2, field: 'eventOrigin' }],
    ]);
    expect(out.accepted).toBe(3);
    expect(out.requests).toBe(3);
    expect(posted).toEqual([
      ['e0', 'e1', 'e2', 'e3', 'e4'],
      ['e0', 'e2', 'e3', 'e4'],
      ['e0', 'e2', 'e4'],
    ]);
  });

  it('fails the whole batch for any other refusal, or an event_invalid without a usable index', async () => {
    const evs = events(4);
    for (const error of [
      new IngestError({ code: 'api_key_invalid', status: 401, message: 'no' }),
      new IngestError({ code: 'event_invalid', status: 400, message: 'no', details: { index: 4 } }),
      new IngestError({ code: 'event_invalid', status: 400, message: 'no' }),
      new IngestError({ code: 'network_error', message: 'no', retriesExhausted: true }),
    ]) {
      const { post, posted } = fakePost(() => ({ ok: false, error, attempts: 3, retries: 2 }));
      const out = await deliverBotApi(evs, post);
      expect(out.failed).toEqual([{ events: evs, error }]);
      expect(out).toMatchObject({ accepted: 0, requests: 3, retries: 2, rejected: [] });
      expect(posted).toHaveLength(1);
    }
  });
});
