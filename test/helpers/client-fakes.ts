// Stand-ins for what the client meets in a browser, for tests that run without one: a storage, a
// page that can be hidden, sendBeacon, and a fetch that answers like the ingestion service.
import { gunzipSync } from 'node:zlib';
import type { OutboxStorage } from '../../client/src/index.js';

/**
 * localStorage's three methods over a Map; `quota` (characters of a value) makes larger writes throw like a full
 * storage.
 */
export class MemoryStorage implements OutboxStorage {
  readonly items = new Map<string, string>();
  writes = 0;
  quota = Infinity;

  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }

  setItem(key: string, value: string): void {
    if (value.length > this.quota) throw new Error('QuotaExceededError');
    this.writes++;
    this.items.set(key, value);
  }

  removeItem(key: string): void {
    this.writes++;
    this.items.delete(key);
  }

  /** The eventIds stored under `key`, in order. */
  ids(key: string): string[] {
    const raw = this.items.get(key);
    return raw === undefined
      ? []
      : (JSON.parse(raw) as { events: { e: { eventId: string } }[] }).events.map((x) => x.e.eventId);
  }
}

/** The storage key of a bot's outbox. */
export const outboxKeyOf = (botId: string) => `tg-ingest:outbox:${botId}`;

/** Lets every queued microtask (the outbox's writes) run. */
export const settleMicrotasks = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export interface Beacon {
  url: string;
  type: string;
  text: string;
  body: { botId: string; auth: { initData: string }; events: { eventId: string }[] };
}

/**
 * Installs a page on globalThis (addEventListener, document.visibilityState, navigator.sendBeacon)
 * until `uninstall()`. `accept(bytes, acceptedBytes)` decides whether sendBeacon takes a body, given
 * the bytes it took so far (`drain()` forgets those, as if the beacons had arrived).
 */
export function installFakePage(accept: (bytes: number, acceptedBytes: number) => boolean = () => true) {
  const g = globalThis as Record<string, unknown>;
  const saved = ['addEventListener', 'removeEventListener', 'document', 'navigator'].map(
    (k) => [k, Object.getOwnPropertyDescriptor(g, k)] as const,
  );
  const win = new EventTarget();
  const doc = Object.assign(new EventTarget(), { visibilityState: 'visible' });
  const reads: Promise<Beacon>[] = [];
  let acceptedBytes = 0;
  g.addEventListener = win.addEventListener.bind(win);
  g.removeEventListener = win.removeEventListener.bind(win);
  g.document = doc;
  g.navigator = {
    sendBeacon(url: string, data: Blob): boolean {
      if (!accept(data.size, acceptedBytes)) return false;
      acceptedBytes += data.size;
      reads.push(data.text().then((text) => ({ url, type: data.type, text, body: JSON.parse(text) })));
      return true;
    },
  };
  return {
    /** Every body sendBeacon took so far, in order. */
    sent: () => Promise.all(reads),
    drain: () => {
      acceptedBytes = 0;
    },
    pagehide: () => win.dispatchEvent(new Event('pagehide')),
    hide: () => {
      doc.visibilityState = 'hidden';
      doc.dispatchEvent(new Event('visibilitychange'));
    },
    show: () => {
      doc.visibilityState = 'visible';
      doc.dispatchEvent(new Event('visibilitychange'));
    },
    uninstall: () => {
      for (const [k, d] of saved) {
        if (d === undefined) delete g[k];
        else Object.defineProperty(g, k, d);
      }
    },
  };
}

export interface FakeRequest {
  url: string;
  headers: Headers;
  body: { botId?: string; auth?: { initData: string }; events: Record<string, unknown>[] };
}

export type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | 'network_error' | 'hang';

/**
 * A fetch that records each request and answers with `answer(request)`; by default every event is
 * accepted with a 202. `accept()` builds such an answer for a subset.
 */
export function fakeFetch(answer: (req: FakeRequest, n: number) => Answer = (req) => accept(req.body.events.length)) {
  const requests: FakeRequest[] = [];
  const impl = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    const raw = init!.body as Uint8Array;
    const bytes = headers.get('content-encoding') === 'gzip' ? gunzipSync(raw) : raw;
    const body = JSON.parse(new TextDecoder().decode(bytes)) as FakeRequest['body'];
    const req = { url: String(input), headers, body };
    requests.push(req);
    const a = answer(req, requests.length);
    if (a === 'network_error') throw new TypeError('fetch failed');
    if (a === 'hang') return new Promise<Response>(() => undefined);
    return new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status, headers: a.headers });
  }) as typeof fetch;
  return { fetch: impl, requests, ids: () => requests.map((r) => r.body.events.map((e) => e.eventId as string)) };
}

export function accept(accepted: number, rejected = 0, diagnostics: unknown[] = []): Answer {
  return {
    status: accepted === 0 && rejected > 0 ? 400 : 202,
    body: {
      accepted,
      rejected,
      not_consumed_duplicated: 0,
      stored_not_billed: 0,
      diagnostics_truncated: false,
      diagnostics,
    },
  };
}

export const refuse = (status: number, error: string): Answer => ({ status, body: { error, message: error } });

/** initData as the messenger hands it, unsigned: the fake fetch does not check it. */
export const initDataFor = (userId: number, authDate = 1_700_000_000) =>
  `user=${encodeURIComponent(JSON.stringify({ id: userId, first_name: 'Ada' }))}&auth_date=${authDate}&signature=x&hash=y`;
