// @tg-ingest/webapp: one call in a mini-app, and its lifecycle, buttons, payments, dialogs and errors are stored in
// tg-ingest as they happen, each with the launch's session_id. Events leave through the client's outbox; what is
// captured as the mini-app closes leaves at once, in a beacon.
import {
  IngestClient,
  outboxKey,
  uuidv7,
  type WebAppClientOptions,
  type WebAppEventInput,
} from '@tg-ingest/client';
import { appClose, appError, appOpen, type Captured, fromMessenger, type Group, pageView, viewPath } from './capture.js';
import { findHost, type Host } from './host.js';

export { GROUPS, type Group } from './capture.js';

export interface TgIngestOptions {
  /** The service's address, e.g. `https://ingest.example.com`. */
  baseUrl: string;
  /** The service's bot id (a UUID), as on the webapp endpoint. */
  botId: string;
  /** Groups to leave out (`false`); `pageViews: true` turns route changes on. Every other group is on. */
  capture?: Partial<Record<Group, boolean>>;
  /** A page view's path keeps its query string (launch parameters are always left out). Default false. */
  pageViewQuery?: boolean;
  /** `app_error` events a session sends at most. Default 20. */
  maxErrors?: number;
  /** Passed to the client (`flushIntervalMs`, `onFailed`, `onRejected`, …). */
  client?: Omit<WebAppClientOptions, 'baseUrl' | 'botId' | 'initData'>;
}

export interface TgIngest {
  /** The current launch's id (a UUIDv7): on every event this SDK sends, as `propsString.session_id`. */
  readonly sessionId: string;
  /** `webapp`: events read through `Telegram.WebApp`; `bridge`: through the messenger's protocol. */
  readonly host: Host['kind'];
  /** A custom event of the mini-app, sent with the session's id; nothing while opted out. */
  track(event: WebAppEventInput): void;
  /** Stops capturing and sending from this browser, kept in `localStorage` across launches. */
  optOut(): void;
  optIn(): void;
  readonly optedOut: boolean;
  /** Sends what is queued; resolves once it is settled. */
  flush(): Promise<unknown>;
  /** Stops listening and sends what is queued. */
  close(): Promise<unknown>;
  /** The underlying client. */
  readonly client: IngestClient<WebAppEventInput>;
}

const OPT_OUT_KEY = 'tg-ingest:opt-out';
const DEFAULT_MAX_ERRORS = 20;
/**
 * Events queued at most (the client's maxQueueEvents, unless given): a page or a messenger that sends a storm of
 * events costs a bounded queue and storage, the oldest going first.
 */
const DEFAULT_MAX_QUEUE = 1000;

interface Page {
  addEventListener(type: string, fn: (e: any) => void, options?: { capture?: boolean }): void;
  removeEventListener(type: string, fn: (e: any) => void, options?: { capture?: boolean }): void;
  localStorage?: { getItem(k: string): string | null; setItem(k: string, v: string): void; removeItem(k: string): void };
  location: { pathname: string; search: string; hash: string };
  history?: { pushState(...a: unknown[]): void; replaceState(...a: unknown[]): void };
  performance: { now(): number };
}

const page = globalThis as unknown as Page;

function storedOptOut(): boolean {
  try {
    return page.localStorage?.getItem(OPT_OUT_KEY) === '1';
  } catch {
    return false;
  }
}

/** Keeps the choice; opting out also deletes what the client kept for a later launch (its outbox for the bot). */
function storeOptOut(out: boolean, botId: string): void {
  try {
    if (out) {
      page.localStorage?.setItem(OPT_OUT_KEY, '1');
      page.localStorage?.removeItem(outboxKey(botId));
    } else page.localStorage?.removeItem(OPT_OUT_KEY);
  } catch {
    // Storage refused: the choice holds for this page only.
  }
}

/** Starts capturing: `app_open` now, the rest as it happens. */
export function tgIngest(options: TgIngestOptions): TgIngest {
  const host = findHost();
  const on = (group: Group) => (group === 'pageViews' ? options.capture?.pageViews === true : options.capture?.[group] !== false);
  const maxErrors = options.maxErrors ?? DEFAULT_MAX_ERRORS;
  let optedOut = storedOptOut();
  let sessionId = uuidv7();
  let openedAt = page.performance.now();
  let errors = 0;
  let closed = false;
  /** This session's app_open was sent: only then is its close (a session is what app_open starts). */
  let openSent = false;
  const stops: (() => void)[] = [];
  const listen = (type: string, fn: (e: any) => void, capture = false) => {
    page.addEventListener(type, fn, { capture });
    stops.push(() => page.removeEventListener(type, fn, { capture }));
  };

  const send = (event: WebAppEventInput) => {
    if (optedOut) return;
    try {
      client.track({ ...event, propsString: { ...event.propsString, session_id: sessionId } });
    } catch {
      // A full queue: the client has reported it (onFailed); the page goes on.
    }
  };
  const capture = (c: Captured | null) => {
    if (c !== null && on(c.group)) send(c.event);
  };

  const opened = () => {
    openSent = on('lifecycle') && !optedOut;
    if (openSent) send(appOpen(host.launch));
  };
  // Registered before the client's own, so the close is tracked before the client hands the queue to beacons.
  listen('pagehide', () => {
    if (closed) return;
    closed = true;
    if (openSent) send(appClose(page.performance.now() - openedAt));
  });

  if (optedOut) storeOptOut(true, options.botId);
  // The webapp client alone: createClient would bring the bot_api client into the page's bundle.
  const client = new IngestClient<WebAppEventInput>({
    maxQueueEvents: DEFAULT_MAX_QUEUE,
    whenFull: 'drop-oldest',
    ...options.client,
    // Opted out: nothing kept for a later launch.
    ...(optedOut ? { persist: false } : {}),
    baseUrl: options.baseUrl,
    botId: options.botId,
    initData: () => host.initData(),
  });

  opened();
  // Back from the back-forward cache: a new launch as far as the user can tell.
  listen('pageshow', (e: { persisted?: boolean }) => {
    if (e.persisted !== true || !closed) return;
    closed = false;
    sessionId = uuidv7();
    openedAt = page.performance.now();
    errors = 0;
    opened();
  });
  stops.push(host.listen((type, data) => capture(fromMessenger(type, data, host))));

  if (on('errors')) {
    // A handler never throws into the page: a reason whose String() or stack throws is reported as unreadable.
    const report = (read: () => [string, string | undefined, string | undefined]) => {
      if (errors >= maxErrors) return;
      errors++;
      let parts: [string, string | undefined, string | undefined];
      try {
        parts = read();
      } catch {
        parts = ['(unreadable)', undefined, undefined];
      }
      send(appError(...parts));
    };
    listen('error', (e: { message?: unknown; filename?: unknown; lineno?: unknown; colno?: unknown; error?: any }) => {
      report(() => [
        String(e.message ?? 'Error'),
        typeof e.filename === 'string' && e.filename !== '' ? `${e.filename}:${e.lineno}:${e.colno}` : undefined,
        typeof e.error?.stack === 'string' ? e.error.stack : undefined,
      ]);
    });
    listen('unhandledrejection', (e: { reason?: any }) => {
      report(() => {
        const r = e.reason;
        return [
          r instanceof Error ? `${r.name}: ${r.message}` : String(r),
          'unhandledrejection',
          typeof r?.stack === 'string' ? r.stack : undefined,
        ];
      });
    });
  }

  if (on('pageViews')) {
    let last: string | null = null;
    const view = () => {
      const path = viewPath(page.location, options.pageViewQuery === true);
      if (path === last) return;
      last = path;
      send(pageView(path));
    };
    const history = page.history;
    if (history !== undefined) {
      for (const method of ['pushState', 'replaceState'] as const) {
        const original = history[method];
        const wrapped = function (this: unknown, ...args: unknown[]) {
          original.apply(this, args);
          view();
        };
        history[method] = wrapped;
        stops.push(() => {
          if (history[method] === wrapped) history[method] = original;
        });
      }
    }
    listen('popstate', view);
    listen('hashchange', view);
    view();
  }

  return {
    get sessionId() {
      return sessionId;
    },
    host: host.kind,
    track: send,
    optOut() {
      optedOut = true;
      storeOptOut(true, options.botId);
    },
    optIn() {
      optedOut = false;
      storeOptOut(false, options.botId);
    },
    get optedOut() {
      return optedOut;
    },
    flush: () => client.flush(),
    close() {
      for (const stop of stops.splice(0)) stop();
      return client.close();
    },
    client,
  };
}
