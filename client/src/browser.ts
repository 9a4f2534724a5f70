// Browser-only globals, reached through the few members this package uses rather than through the
// DOM typings: the sources type-check without the DOM library, and where a global is missing (Node,
// a worker) the feature that needs it is simply off.
import type { OutboxStorage } from './types.js';

type Listener = () => void;

interface Listenable {
  addEventListener(type: string, listener: Listener): void;
  removeEventListener(type: string, listener: Listener): void;
}

interface BrowserGlobals extends Partial<Listenable> {
  localStorage?: OutboxStorage;
  navigator?: { sendBeacon?: (url: string, data: Blob) => boolean };
  document?: Partial<Listenable> & { visibilityState?: string };
}

const browser = globalThis as unknown as BrowserGlobals;

/** `localStorage`, or null where there is none or touching it throws (storage disabled, sandboxed frame). */
export function browserStorage(): OutboxStorage | null {
  try {
    const s = browser.localStorage;
    return s !== undefined && s !== null && typeof s.getItem === 'function' ? s : null;
  } catch {
    return null;
  }
}

/** Posts a text/plain body with `navigator.sendBeacon` (no CORS preflight); false when the browser refused it. */
export type BeaconSender = (url: string, body: string) => boolean;

export function beaconSender(): BeaconSender | null {
  const nav = browser.navigator;
  const send = nav?.sendBeacon;
  if (typeof send !== 'function') return null;
  return (url, body) => {
    try {
      return send.call(nav, url, new Blob([body], { type: 'text/plain;charset=UTF-8' }));
    } catch {
      return false;
    }
  };
}

/**
 * Calls `onHide` on `pagehide` and when the document becomes hidden: on mobile a backgrounded
 * mini-app may be killed without ever seeing `pagehide`. Returns what stops watching, or null
 * outside a browser.
 */
export function watchPageHide(onHide: Listener): Listener | null {
  const doc = browser.document;
  // A global with addEventListener has removeEventListener too (EventTarget): one check each.
  if (typeof browser.addEventListener !== 'function' || typeof doc?.addEventListener !== 'function') return null;
  const onVisibility = () => {
    if (doc.visibilityState === 'hidden') onHide();
  };
  browser.addEventListener('pagehide', onHide);
  doc.addEventListener('visibilitychange', onVisibility);
  return () => {
    browser.removeEventListener?.('pagehide', onHide);
    doc.removeEventListener?.('visibilitychange', onVisibility);
  };
}
