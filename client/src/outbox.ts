// The webapp client's outbox: every event it holds until an answer settles it, mirrored to storage so
// that the next session of the mini-app sends what this one could not (a closed page, a lost
// network). Storage is written as deltas merged into what is stored, so two tabs of the same mini-app
// do not erase each other's events; the worst a race can cause is an event sent twice, which the
// server recognises by its eventId.
import { IngestError } from './errors.js';
import type { OutboxStorage, Stamped } from './types.js';

/**
 * The stored form: the event and the user it was tracked for, so another user's session never sends it under its own
 * initData.
 */
interface Entry<E> {
  u: string | null;
  e: Stamped<E>;
}

interface Held<E> {
  entry: Entry<E>;
  /** Its delivery failed in a way a later attempt may pass; the first to go when room is needed. */
  failed: boolean;
  /** Already handed to a beacon by this page: each hidden page sends what the previous one did not. */
  beaconed: boolean;
}

const VERSION = 1;

export const outboxKey = (botId: string) => `tg-ingest:outbox:${botId}`;

/** The server compares eventIds case-insensitively. */
export const idKey = (eventId: string) => eventId.toLowerCase();

export class Outbox<E> {
  readonly #held = new Map<string, Held<E>>();
  /** Changes not yet written: storage is rewritten once per task, not per event. */
  readonly #added = new Map<string, Entry<E>>();
  readonly #removed = new Set<string>();
  #saveQueued = false;
  readonly #storage: OutboxStorage | null;
  readonly #key: string;
  readonly #user: () => string | null;

  /**
   * @param storage null keeps events in memory only (for the beacons).
   * @param user the user of the current initData, or null when it has none.
   */
  constructor(storage: OutboxStorage | null, key: string, user: () => string | null) {
    this.#storage = storage;
    this.#key = key;
    this.#user = user;
  }

  get persists(): boolean {
    return this.#storage !== null;
  }

  get size(): number {
    return this.#held.size;
  }

  /**
   * Stored events of the current user that this outbox does not hold yet, oldest first, at most `max`; they are held
   * from now on.
   */
  load(max: number): Stamped<E>[] {
    if (this.#storage === null || max <= 0) return [];
    const user = this.#user();
    if (user === null) return [];
    const out: Stamped<E>[] = [];
    for (const entry of this.#read()) {
      if (out.length >= max) break;
      const k = idKey(entry.e.eventId);
      if (entry.u !== user || this.#held.has(k)) continue;
      this.#held.set(k, { entry, failed: false, beaconed: false });
      out.push(entry.e);
    }
    return out;
  }

  add(event: Stamped<E>): void {
    const k = idKey(event.eventId);
    const entry: Entry<E> = { u: this.#storage === null ? null : this.#user(), e: event };
    this.#held.set(k, { entry, failed: false, beaconed: false });
    if (this.#storage === null) return;
    this.#added.set(k, entry);
    this.#queueSave();
  }

  /** The events are done with: stored, rejected, or failed for good. */
  settle(events: Iterable<Stamped<E>>): void {
    for (const e of events) this.#drop(idKey(e.eventId));
  }

  /** The events stay held (and stored) after a failure that a later attempt may pass. */
  keepFailed(events: Iterable<Stamped<E>>): void {
    for (const e of events) {
      const h = this.#held.get(idKey(e.eventId));
      if (h !== undefined) h.failed = true;
    }
  }

  /** Drops kept failures, oldest first, until at most `max` events are held. They were reported to onFailed already. */
  makeRoom(max: number): void {
    if (this.#held.size <= max) return;
    for (const [k, h] of this.#held) {
      if (this.#held.size <= max) break;
      if (h.failed) this.#drop(k);
    }
  }

  /**
   * Held events in the order a beacon should carry them: never sent or failed before in flight (which may be committed
   * already), oldest first; those beaconed already are left out.
   */
  forBeacon(queued: Iterable<Stamped<E>>): Stamped<E>[] {
    const first: Stamped<E>[] = [];
    const seen = new Set<string>();
    for (const e of queued) {
      const k = idKey(e.eventId);
      const h = this.#held.get(k);
      if (h === undefined || h.beaconed || seen.has(k)) continue;
      seen.add(k);
      first.push(h.entry.e);
    }
    const failed: Stamped<E>[] = [];
    const inFlight: Stamped<E>[] = [];
    for (const [k, h] of this.#held) {
      if (h.beaconed || seen.has(k)) continue;
      (h.failed ? failed : inFlight).push(h.entry.e);
    }
    return [...first, ...failed, ...inFlight];
  }

  markBeaconed(events: Iterable<Stamped<E>>): void {
    for (const e of events) {
      const h = this.#held.get(idKey(e.eventId));
      if (h !== undefined) h.beaconed = true;
    }
  }

  /** Writes the pending changes now (also done after each task that made some). */
  save(): void {
    if (this.#storage === null || (this.#added.size === 0 && this.#removed.size === 0)) return;
    const stored = this.#read();
    const kept = stored.filter((x) => !this.#removed.has(idKey(x.e.eventId)));
    const present = new Set(kept.map((x) => idKey(x.e.eventId)));
    const merged = [...kept, ...[...this.#added].filter(([k]) => !present.has(k)).map(([, x]) => x)];
    if (this.#write(merged)) {
      this.#added.clear();
    } else if (kept.length < stored.length) {
      // Full (quota): at least forget what is settled. The additions wait for the next write.
      this.#write(kept);
    }
    // A removal that could not be written costs at most a redelivery, which the server recognises.
    this.#removed.clear();
  }

  #drop(k: string): void {
    if (!this.#held.delete(k)) return;
    if (this.#storage === null) return;
    this.#added.delete(k);
    this.#removed.add(k);
    this.#queueSave();
  }

  #queueSave(): void {
    if (this.#saveQueued) return;
    this.#saveQueued = true;
    queueMicrotask(() => {
      this.#saveQueued = false;
      this.save();
    });
  }

  #read(): Entry<E>[] {
    let raw: string | null;
    try {
      raw = this.#storage!.getItem(this.#key);
    } catch {
      return [];
    }
    if (raw === null) return [];
    try {
      const doc = JSON.parse(raw) as { v?: unknown; events?: unknown };
      return doc.v === VERSION && Array.isArray(doc.events) ? (doc.events.filter(isEntry) as Entry<E>[]) : [];
    } catch {
      return [];
    }
  }

  #write(entries: Entry<E>[]): boolean {
    try {
      if (entries.length === 0) this.#storage!.removeItem(this.#key);
      else this.#storage!.setItem(this.#key, JSON.stringify({ v: VERSION, events: entries }));
      return true;
    } catch {
      return false;
    }
  }
}

function isEntry(x: unknown): boolean {
  if (typeof x !== 'object' || x === null) return false;
  const { u, e } = x as { u?: unknown; e?: unknown };
  if (u !== null && typeof u !== 'string') return false;
  if (typeof e !== 'object' || e === null) return false;
  const { eventId, eventDate } = e as { eventId?: unknown; eventDate?: unknown };
  return typeof eventId === 'string' && eventId !== '' && typeof eventDate === 'string';
}

/** The user id in initData's `user` field, or null when there is none. */
export function initDataUser(initData: string): string | null {
  try {
    const user = JSON.parse(new URLSearchParams(initData).get('user') ?? 'null') as { id?: unknown } | null;
    const id = user?.id;
    return typeof id === 'number' || (typeof id === 'string' && id !== '') ? String(id) : null;
  } catch {
    return null;
  }
}

/**
 * Failures a later attempt may pass, so their events stay stored: no answer, a retryable status
 * whose retries ran out, or initData that was too old (or, by the server's clock, too new) and
 * which the next session replaces. Anything else would fail the same way again.
 */
export function mayPassLater(error: Error): boolean {
  if (!(error instanceof IngestError)) return false;
  if (error.code === 'network_error' || error.code === 'timeout' || error.retriesExhausted) return true;
  return error.code === 'initdata_expired' || error.code === 'initdata_from_future';
}
