// The vocabulary: what the messenger tells a mini-app, as the events stored for it. One table, so the reports, a
// team's own SQL and the docs (integrations/MAPPING.md) use the same names. Pure: no page, no clock.
import type { WebAppEventInput } from '@tg-ingest/client';

/** What can be turned off, each on its own. `pageViews` is off unless asked for. */
export type Group = 'lifecycle' | 'buttons' | 'payments' | 'dialogs' | 'features' | 'errors' | 'pageViews';

export const GROUPS: readonly Group[] = [
  'lifecycle',
  'buttons',
  'payments',
  'dialogs',
  'features',
  'errors',
  'pageViews',
];

export interface Captured {
  group: Group;
  event: WebAppEventInput;
}

/** What a capture may ask of the page beside the event's own data. */
export interface CaptureContext {
  /** A button's label, where the page's library keeps it (`Telegram.WebApp.MainButton.text`). */
  buttonText(button: 'main' | 'secondary'): string | undefined;
}

/** A property's longest value, in UTF-8 bytes. */
export const TEXT_BYTES = 1024;

const BUTTONS: Record<string, ['main' | 'secondary' | null, string]> = {
  main_button_pressed: ['main', 'main_button_clicked'],
  secondary_button_pressed: ['secondary', 'secondary_button_clicked'],
  back_button_pressed: [null, 'back_button_clicked'],
  settings_button_pressed: [null, 'settings_button_clicked'],
};

/** Dialog answers stored with their `status`; what the user typed, scanned or shared is never read. */
const DIALOGS: Record<string, string> = {
  qr_text_received: 'qr_scanned',
  clipboard_text_received: 'clipboard_read',
  write_access_requested: 'write_access_requested',
  phone_requested: 'contact_requested',
};

const FEATURES: Record<string, string> = {
  fullscreen_changed: 'fullscreen_changed',
  home_screen_added: 'home_screen_added',
  prepared_message_sent: 'share_message_sent',
  emoji_status_set: 'emoji_status_set',
};

/** Every eventName this SDK sends on its own (integrations/MAPPING.md lists them); a bundle that never asks leaves it out. */
export const capturedNames = (): string[] => [
  'app_open',
  'app_close',
  'app_activated',
  'app_deactivated',
  ...Object.values(BUTTONS).map((b) => b[1]),
  'invoice_closed',
  'popup_closed',
  ...Object.values(DIALOGS),
  ...Object.values(FEATURES),
  'app_error',
  'page_view',
];

const INVOICE_STATUSES = new Set(['paid', 'cancelled', 'failed', 'pending']);

/** A status word as the messenger sends it (`allowed`, `sent`, `cancelled`, …); anything else is left out. */
const statusWord = (v: unknown): string | undefined =>
  typeof v === 'string' && /^[a-z_]{1,32}$/.test(v) ? v : undefined;

/** `s` cut to at most `bytes` UTF-8 bytes, never in the middle of a character. */
export function cut(s: string, bytes = TEXT_BYTES): string {
  // A UTF-16 unit is at most 3 UTF-8 bytes: shorter strings need no counting.
  if (s.length * 3 <= bytes) return s;
  // A UTF-16 unit is at least 1 byte: no more than `bytes` of them can fit, and a long string is not encoded whole.
  const encoded = new TextEncoder().encode(s.slice(0, bytes));
  if (encoded.length <= bytes) return s;
  let end = bytes;
  // Back to the start of a character: continuation bytes are 10xxxxxx.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(encoded.subarray(0, end));
}

/** The invoice's slug in the link the app opened: `https://t.me/$<slug>` or `https://t.me/invoice/<slug>`. */
export function invoiceSlug(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  const m = /^https?:\/\/(?:t|telegram)\.me\/(?:\$|invoice\/)([A-Za-z0-9_-]{1,256})(?:[/?#]|$)/.exec(url.trim());
  return m?.[1];
}

/** The table's own entry for a name the page controls (never Object.prototype's). */
const own = <T>(table: Record<string, T>, key: string): T | undefined =>
  Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined;

const event = (
  eventName: string,
  eventType: WebAppEventInput['eventType'],
  props: Pick<WebAppEventInput, 'propsString' | 'propsLong' | 'propsBool'> = {},
): WebAppEventInput => ({ eventName, eventType, ...props });

const strings = (entries: Record<string, string | undefined>): Record<string, string> | undefined => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(entries)) if (v !== undefined) out[k] = cut(v);
  return Object.keys(out).length > 0 ? out : undefined;
};

/**
 * The event stored for one the messenger sent (`eventType` and `eventData` as its protocol names them: both the
 * messenger's script and the bridge of `@telegram-apps/sdk` receive these), or null for one not captured.
 */
export function fromMessenger(type: string, data: unknown, ctx: CaptureContext): Captured | null {
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  if (type === 'visibility_changed')
    return {
      group: 'lifecycle',
      event: event(d.is_visible === true ? 'app_activated' : 'app_deactivated', 'platform'),
    };
  const button = own(BUTTONS, type);
  if (button !== undefined) {
    const text = button[0] === null ? undefined : ctx.buttonText(button[0]);
    return { group: 'buttons', event: event(button[1], 'interaction', { propsString: strings({ button_text: text }) }) };
  }
  if (type === 'invoice_closed') {
    const slug = typeof d.slug === 'string' && d.slug !== '' ? d.slug : invoiceSlug(d.url);
    const status = typeof d.status === 'string' && INVOICE_STATUSES.has(d.status) ? d.status : undefined;
    return {
      group: 'payments',
      event: event('invoice_closed', 'payment', { propsString: strings({ invoice_slug: slug, status }) }),
    };
  }
  if (type === 'popup_closed') {
    const id = typeof d.button_id === 'string' && d.button_id !== '' ? d.button_id : undefined;
    return { group: 'dialogs', event: event('popup_closed', 'interaction', { propsString: strings({ button_id: id }) }) };
  }
  const dialog = own(DIALOGS, type);
  if (dialog !== undefined)
    return {
      group: 'dialogs',
      event: event(dialog, 'interaction', { propsString: strings({ status: statusWord(d.status) }) }),
    };
  const feature = own(FEATURES, type);
  if (feature !== undefined) {
    const props = typeof d.is_fullscreen === 'boolean' ? { propsBool: { is_fullscreen: d.is_fullscreen } } : {};
    return { group: 'features', event: event(feature, 'platform', props) };
  }
  return null;
}

/** `app_open`, with what is known of the launch. */
export function appOpen(launch: {
  platform?: string;
  version?: string;
  colorScheme?: string;
  isFullscreen?: boolean;
  viewportHeight?: number;
  isExpanded?: boolean;
}): WebAppEventInput {
  const propsLong = launch.viewportHeight === undefined ? undefined : { viewport_height: launch.viewportHeight };
  const bools: Record<string, boolean> = {};
  if (launch.isFullscreen !== undefined) bools.is_fullscreen = launch.isFullscreen;
  if (launch.isExpanded !== undefined) bools.is_expanded = launch.isExpanded;
  return event('app_open', 'platform', {
    propsString: strings({ platform: launch.platform, version: launch.version, color_scheme: launch.colorScheme }),
    propsLong,
    propsBool: Object.keys(bools).length > 0 ? bools : undefined,
  });
}

export const appClose = (durationMs: number): WebAppEventInput =>
  event('app_close', 'platform', { propsLong: { duration_ms: Math.max(0, Math.round(durationMs)) } });

/**
 * A text with the launch parameters and initData's fields taken out: an error's message or stack may hold the page's
 * address (its fragment carries tgWebAppData) or initData itself, a credential.
 */
export function withoutLaunch(text: string | undefined): string | undefined {
  if (text === undefined) return text;
  // What may still be kept after the redaction, not a page's megabyte of stack.
  const head = text.slice(0, 8 * TEXT_BYTES);
  if (!/tgWebApp|auth_date|query_id|signature|hash=/.test(head)) return head;
  return head.replace(
    /\b(tgWebApp\w*|query_id|user|receiver|chat|chat_type|chat_instance|start_param|can_send_after|auth_date|signature|hash)=[^&\s#"'`]*/g,
    '$1=…',
  );
}

export const appError = (message: string, source: string | undefined, stack: string | undefined): WebAppEventInput =>
  event('app_error', 'platform', {
    propsString: strings({
      message: withoutLaunch(message),
      source: withoutLaunch(source),
      stack: withoutLaunch(stack),
    }),
  });

export const pageView = (path: string): WebAppEventInput =>
  event('page_view', 'interaction', { propsString: strings({ path }) });

/**
 * The path a page view records: the location's path, a hash router's route (`#/cart`), and its query only when
 * asked. The launch parameters the messenger puts in the fragment (initData among them) are never part of it.
 */
export function viewPath(location: { pathname: string; search: string; hash: string }, withQuery: boolean): string {
  const strip = (query: string) => {
    const kept = query
      .split('&')
      .filter((p) => p !== '' && !p.startsWith('tgWebApp'))
      .join('&');
    return kept === '' ? '' : `?${kept}`;
  };
  let path = location.pathname;
  if (withQuery) path += strip(location.search.replace(/^\?/, ''));
  if (location.hash.startsWith('#/')) {
    const route = location.hash.slice(1);
    const q = route.indexOf('?');
    path += `#${q < 0 ? route : route.slice(0, q) + (withQuery ? strip(route.slice(q + 1)) : '')}`;
  }
  return path;
}
