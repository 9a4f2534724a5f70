// Turns the server's answer into a fate per event: accepted, rejected (with its diagnostics) or
// failed. The server lists at most 100 diagnostics, so a rejection can go unnamed; such events are
// resent in halves until each rejection is named. That is safe: already stored events come back
// as accepted and are neither stored nor billed twice.
import type { IngestError } from './errors.js';
import type { SendResult } from './transport.js';
import type { Diagnostic, FailedEvents, RejectedEvent, Stamped } from './types.js';

export interface Outcome<E> {
  accepted: number;
  duplicated: number;
  storedNotBilled: number;
  requests: number;
  retries: number;
  rejected: RejectedEvent<E>[];
  failed: FailedEvents<E>[];
  warnings: { events: Stamped<E>[]; diagnostics: Diagnostic[] };
}

export type Post<E> = (events: Stamped<E>[]) => Promise<SendResult>;

const key = (id: string) => id.toLowerCase();

export async function deliver<E>(events: Stamped<E>[], post: Post<E>): Promise<Outcome<E>> {
  const out: Outcome<E> = {
    accepted: 0,
    duplicated: 0,
    storedNotBilled: 0,
    requests: 0,
    retries: 0,
    rejected: [],
    failed: [],
    warnings: { events: [], diagnostics: [] },
  };
  const r = await post(events);
  out.requests += r.attempts;
  out.retries += r.retries;

  if (!r.ok) {
    const bad = invalidIndex(r.error, events.length);
    if (bad === null) {
      out.failed.push({ events, error: r.error });
      return out;
    }
    // bot_api refuses the whole request for one malformed event: report that one, send the others.
    out.failed.push({ events: [events[bad]!], error: r.error });
    const rest = events.filter((_, i) => i !== bad);
    return rest.length === 0 ? out : merge(out, await deliver(rest, post));
  }

  const body = r.body;
  out.accepted = body.accepted;
  out.duplicated = body.not_consumed_duplicated ?? 0;
  out.storedNotBilled = body.stored_not_billed ?? 0;

  const diagsById = new Map<string, Diagnostic[]>();
  const unnamedWarnings: Diagnostic[] = [];
  for (const d of body.diagnostics) {
    if (typeof d.event_id !== 'string') {
      if (d.severity === 'warning') unnamedWarnings.push(d);
      continue;
    }
    const list = diagsById.get(key(d.event_id));
    if (list === undefined) diagsById.set(key(d.event_id), [d]);
    else list.push(d);
  }

  // The server keeps the first occurrence of an id and counts the others as duplicates.
  const seen = new Set<string>();
  const firsts = events.filter((e) => !seen.has(key(e.eventId)) && seen.add(key(e.eventId)));
  const everyRejected = r.status === 400;
  const rejected: Stamped<E>[] = [];
  const others: Stamped<E>[] = [];
  for (const e of firsts) {
    const ds = diagsById.get(key(e.eventId));
    if (everyRejected || ds?.some((d) => d.severity === 'error')) rejected.push(e);
    else others.push(e);
    const warnings = ds?.filter((d) => d.severity === 'warning') ?? [];
    if (warnings.length > 0 && !everyRejected && !ds!.some((d) => d.severity === 'error')) {
      out.warnings.events.push(e);
      out.warnings.diagnostics.push(...warnings);
    }
  }
  out.warnings.diagnostics.push(...unnamedWarnings);
  for (const e of rejected) out.rejected.push({ event: e, diagnostics: diagsById.get(key(e.eventId)) ?? [] });

  const unnamed = body.rejected - rejected.length;
  if (unnamed > 0 && others.length > 0) {
    if (unnamed >= others.length) {
      for (const e of others) out.rejected.push({ event: e, diagnostics: [] });
    } else {
      await name(others, post, out);
    }
  }
  return out;
}

/** Resends `events` in halves; only their rejections and failures count, the rest were stored already. */
async function name<E>(events: Stamped<E>[], post: Post<E>, out: Outcome<E>): Promise<void> {
  const mid = Math.ceil(events.length / 2);
  for (const half of [events.slice(0, mid), events.slice(mid)]) {
    if (half.length === 0) continue;
    const o = await deliver(half, post);
    out.requests += o.requests;
    out.retries += o.retries;
    out.rejected.push(...o.rejected);
    out.failed.push(...o.failed);
  }
}

function invalidIndex(error: IngestError, n: number): number | null {
  if (error.status !== 400 || error.code !== 'event_invalid') return null;
  const index = (error.details as { index?: unknown } | undefined)?.index;
  return typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < n ? index : null;
}

function merge<E>(a: Outcome<E>, b: Outcome<E>): Outcome<E> {
  a.accepted += b.accepted;
  a.duplicated += b.duplicated;
  a.storedNotBilled += b.storedNotBilled;
  a.requests += b.requests;
  a.retries += b.retries;
  a.rejected.push(...b.rejected);
  a.failed.push(...b.failed);
  a.warnings.events.push(...b.warnings.events);
  a.warnings.diagnostics.push(...b.warnings.diagnostics);
  return a;
}
