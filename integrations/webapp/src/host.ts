// Where the messenger's events reach the page. With the messenger's own script (`telegram-web-app.js`, or
// `@twa-dev/sdk`, which ships it) they are read through `Telegram.WebApp.onEvent`, its public API. Otherwise (the
// bridge of `@telegram-apps/sdk`, or no library yet) they are read where the messenger delivers them: a message from
// the parent frame in a web client, `receiveEvent` on the globals a native client calls. Either way each is handed on
// under its protocol name, so one table (capture.ts) names what is stored.
import { hashParams, type Launch, launchFromParams, launchFromWebApp, type WebAppLaunchView } from './launch.js';

/** A messenger event under its protocol name (`invoice_closed`, `main_button_pressed`, …) with its data. */
export type OnMessengerEvent = (type: string, data: unknown) => void;

export interface Host {
  kind: 'webapp' | 'bridge';
  launch: Launch;
  /** Read for every request: a library may refresh it. */
  initData(): string;
  buttonText(button: 'main' | 'secondary'): string | undefined;
  /** Starts handing events on; returns what stops it. */
  listen(on: OnMessengerEvent): () => void;
}

interface Button {
  text?: unknown;
}

interface WebApp extends WebAppLaunchView {
  onEvent(name: string, handler: (data?: unknown) => void): void;
  offEvent(name: string, handler: (data?: unknown) => void): void;
  MainButton?: Button;
  SecondaryButton?: Button;
}

type Receiver = (type: string, data?: unknown) => void;

interface PageGlobals {
  Telegram?: { WebApp?: WebApp; WebView?: { receiveEvent?: Receiver } };
  TelegramGameProxy?: { receiveEvent?: Receiver };
  TelegramGameProxy_receiveEvent?: Receiver;
  parent?: unknown;
  location?: { hash: string };
  sessionStorage?: { getItem(key: string): string | null };
  performance?: { getEntriesByType?(type: string): { name: string }[] };
  addEventListener?(type: string, fn: (e: { source?: unknown; data?: unknown }) => void): void;
  removeEventListener?(type: string, fn: (e: { source?: unknown; data?: unknown }) => void): void;
}

/**
 * `Telegram.WebApp`'s events under their protocol names. Their data passes on as it came: capture.ts reads only the
 * fields it stores (never a scanned text, a clipboard or a contact).
 */
const WEBAPP_EVENTS: Record<string, string> = {
  activated: 'visibility_changed',
  deactivated: 'visibility_changed',
  mainButtonClicked: 'main_button_pressed',
  secondaryButtonClicked: 'secondary_button_pressed',
  backButtonClicked: 'back_button_pressed',
  settingsButtonClicked: 'settings_button_pressed',
  invoiceClosed: 'invoice_closed',
  popupClosed: 'popup_closed',
  qrTextReceived: 'qr_text_received',
  clipboardTextReceived: 'clipboard_text_received',
  writeAccessRequested: 'write_access_requested',
  contactRequested: 'phone_requested',
  fullscreenChanged: 'fullscreen_changed',
  homeScreenAdded: 'home_screen_added',
  shareMessageSent: 'prepared_message_sent',
  emojiStatusSet: 'emoji_status_set',
};

/** A message longer than this is not the messenger's: it is not parsed. */
const MESSAGE_CHARS = 65_536;

/** The launch parameters: from the fragment, or where a library or router that moved on left them. */
function launchParams(g: PageGlobals): Record<string, string> {
  const fromHash = hashParams(g.location?.hash ?? '');
  if (fromHash.tgWebAppData !== undefined) return fromHash;
  try {
    const first = g.performance?.getEntriesByType?.('navigation')[0]?.name;
    const fromFirst = first === undefined || !first.includes('#') ? {} : hashParams(first.slice(first.indexOf('#')));
    if (fromFirst.tgWebAppData !== undefined) return fromFirst;
    // The messenger's script keeps them for a reload.
    const kept = JSON.parse(g.sessionStorage?.getItem('__telegram__initParams') ?? 'null') as unknown;
    if (typeof kept === 'object' && kept !== null)
      return Object.fromEntries(Object.entries(kept).filter(([, v]) => typeof v === 'string')) as Record<
        string,
        string
      >;
  } catch {
    // Storage refused (a sandboxed frame): what the fragment said stands.
  }
  return fromHash;
}

export function findHost(g: PageGlobals = globalThis as unknown as PageGlobals): Host {
  const fromParams = launchFromParams(launchParams(g));
  const webApp = g.Telegram?.WebApp;
  if (webApp !== undefined && typeof webApp.onEvent === 'function') {
    return {
      kind: 'webapp',
      launch: launchFromWebApp(webApp, fromParams),
      initData: () => (typeof webApp.initData === 'string' && webApp.initData !== '' ? webApp.initData : fromParams.initData),
      buttonText(button) {
        const text = (button === 'main' ? webApp.MainButton : webApp.SecondaryButton)?.text;
        return typeof text === 'string' && text !== '' ? text : undefined;
      },
      listen(on) {
        const handlers = Object.entries(WEBAPP_EVENTS).map(([name, type]) => {
          // The two whose state the protocol carries in their data and Telegram.WebApp in its fields.
          const handler = (data?: unknown) =>
            on(
              type,
              type === 'visibility_changed'
                ? { is_visible: name === 'activated' }
                : type === 'fullscreen_changed'
                  ? { is_fullscreen: webApp.isFullscreen }
                  : data,
            );
          webApp.onEvent(name, handler);
          return [name, handler] as const;
        });
        return () => {
          for (const [name, handler] of handlers) webApp.offEvent(name, handler);
        };
      },
    };
  }
  const height = (g as { innerHeight?: unknown }).innerHeight;
  return {
    kind: 'bridge',
    launch: typeof height === 'number' && height > 0 ? { ...fromParams, viewportHeight: Math.round(height) } : fromParams,
    initData: () => fromParams.initData,
    buttonText: () => undefined,
    listen: (on) => listenToProtocol(g, on),
  };
}

/** The messenger's events as it delivers them, beside whatever else the page listens with. */
function listenToProtocol(g: PageGlobals, on: OnMessengerEvent): () => void {
  // Never throws into the messenger's call, nor keeps the page's library from its event.
  const receive: Receiver = (type, data) => {
    try {
      if (typeof type === 'string') on(type, data);
    } catch {
      // Captured events are the page's least concern.
    }
  };
  // A web client posts a JSON string from the parent frame (and @telegram-apps/sdk's bridge re-posts a native client's
  // calls as such messages, from window.parent: the window itself at the top). Messages from anywhere else, another
  // frame or the page to itself inside a frame, are not the messenger's.
  const onMessage = (e: { source?: unknown; data?: unknown }) => {
    if (e.source !== g.parent || typeof e.data !== 'string' || e.data.length > MESSAGE_CHARS) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(e.data);
    } catch {
      return;
    }
    if (typeof parsed === 'object' && parsed !== null)
      receive((parsed as { eventType: string }).eventType, (parsed as { eventData?: unknown }).eventData);
  };
  const restore: (() => void)[] = [];
  // Inside a frame the messenger is a web client: its messages are all. At the top, a native client calls one of the
  // global receivers: where the bridge has made them its own (accessors), it re-posts each call as a message; else
  // ours is composed with whatever is there, called first, and the bridge, set up later, composes with it in turn.
  const receivers: [Record<string, unknown>, string][] = [];
  if (g.parent === g) {
    g.TelegramGameProxy ??= {};
    g.Telegram ??= {};
    g.Telegram.WebView ??= {};
    receivers.push(
      [g.TelegramGameProxy as Record<string, unknown>, 'receiveEvent'],
      [g.Telegram.WebView as Record<string, unknown>, 'receiveEvent'],
      [g as unknown as Record<string, unknown>, 'TelegramGameProxy_receiveEvent'],
    );
  }
  const bridged = receivers.some(([holder, key]) => typeof Object.getOwnPropertyDescriptor(holder, key)?.set === 'function');
  if (receivers.length === 0 || bridged) g.addEventListener?.('message', onMessage);
  else
    for (const [holder, key] of receivers) {
      const before = holder[key];
      const composed: Receiver = (type, data) => {
        receive(type, data);
        if (typeof before === 'function') (before as Receiver)(type, data);
      };
      holder[key] = composed;
      restore.push(() => {
        if (holder[key] === composed) holder[key] = before;
      });
    }
  return () => {
    g.removeEventListener?.('message', onMessage);
    for (const r of restore) r();
  };
}
