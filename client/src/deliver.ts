// Turns the server's answer into a fate per event: accepted, rejected (with its diagnostics) or
// failed. The server lists at most 100 diagnostics, so a rejection can go unnamed; such events are
// resent in halves until each rejection is named. That is safe: already stored events come back
// as accepted and are neither stored nor billed twice.
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

/** The counts an Outcome and a flush() report share. */
const COUNTS = ['accepted', 'duplicated', 'storedNotBilled', 'requests', 'retries'] as const;

export function addCounts(into: Record<(typeof COUNTS)[number], number>, from: Outcome<unknown>): void {
  for (const k of COUNTS) into[k] += from[k];
}

export function emptyOutcome<E>(): Outcome<E> {
  return {
    accepted: 0,
    duplicated: 0,
    storedNotBilled: 0,
    requests: 0,
    retries: 0,
    rejected: [],
    failed: [],
    warnings: { events: [], diagnostics: [] },
  };
}

const key = (id: string) => id.toLowerCase();

export async function deliver<E>(events: Stamped<E>[], post: Post<E>): Promise<Outcome<E>> {
  const out = emptyOutcome<E>();
  const r = await post(events);
  out.requests += r.attempts;
  out.retries += r.retries;

  if (!r.ok) {
    out.failed.push({ events, error: r.error });
    return out;
  }

  const body = r.body;
  out.accepted = body.accepted;
  out.duplicated = body.not_consumed_duplicated ?? 0;
  out.storedNotBilled = body.stored_not_billed ?? 0;

  const diagsById = new Map<string, Diagnostic[]>();
  const unnamedWarnings: Diagnostic[] = [];
  for (const d of body.diagnostics) {
    if (typeof d.event_id === 'string') {
      const k = key(d.event_id);
      diagsById.set(k, [...(diagsById.get(k) ?? []), d]);
    } else if (d.severity === 'warning') unnamedWarnings.push(d);
  }

  // The server keeps the first occurrence of an id and counts the others as duplicates.
  const seen = new Set<string>();
  const others: Stamped<E>[] = [];
  for (const e of events) {
    const k = key(e.eventId);
    if (seen.has(k)) continue;
    seen.add(k);
    const ds = diagsById.get(k) ?? [];
    if (r.status === 400 || ds.some((d) => d.severity === 'error')) {
      out.rejected.push({ event: e, diagnostics: ds });
      continue;
    }
    others.push(e);
    const warnings = ds.filter((d) => d.severity === 'warning');
    if (warnings.length > 0) {
      out.warnings.events.push(e);
      out.warnings.diagnostics.push(...warnings);
    }
  }

  out.warnings.diagnostics.push(...unnamedWarnings);

  const unnamed = body.rejected - out.rejected.length;
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

/** `b` added to `a`. */
export function merge<E>(a: Outcome<E>, b: Outcome<E>): Outcome<E> {
  addCounts(a, b);
  a.rejected.push(...b.rejected);
  a.failed.push(...b.failed);
  a.warnings.events.push(...b.warnings.events);
  a.warnings.diagnostics.push(...b.warnings.diagnostics);
  return a;
}
