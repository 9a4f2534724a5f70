// What the messenger tells a mini-app when it opens it: the launch parameters in the URL fragment
// (`#tgWebAppData=…&tgWebAppVersion=…&tgWebAppPlatform=…&tgWebAppThemeParams=…`), as its own script reads them.
// Pure: the caller passes the fragment, and what the page's library already knows wins over it.

export interface Launch {
  /** The signed initData, as `Telegram.WebApp.initData` gives it; '' when the page was not opened by the messenger. */
  initData: string;
  /** `ios`, `android`, `tdesktop`, `weba`, `webk`, `macos`, … as the messenger names them. */
  platform?: string;
  /** The Bot API version the client supports, e.g. `"8.0"`. */
  version?: string;
  colorScheme?: 'light' | 'dark';
  isFullscreen?: boolean;
  isExpanded?: boolean;
  viewportHeight?: number;
}

/** The launch parameters of a URL fragment (with or without its `#`); {} when there are none. */
export function hashParams(hash: string): Record<string, string> {
  const out: Record<string, string> = {};
  const text = hash.startsWith('#') ? hash.slice(1) : hash;
  // A hash router's path ("#/cart?x=1") carries the parameters, if any, after its "?".
  const query = text.includes('?') && !text.startsWith('tgWebApp') ? text.slice(text.indexOf('?') + 1) : text;
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq);
    if (!name.startsWith('tgWebApp')) continue;
    try {
      out[name] = decodeURIComponent(part.slice(eq + 1).replace(/\+/g, '%20'));
    } catch {
      // A malformed escape: that parameter is unknown, the others still count.
    }
  }
  return out;
}

/** The messenger's own rule: a background darker than this is a dark theme. */
export function colorSchemeOf(bgColor: unknown): 'light' | 'dark' | undefined {
  if (typeof bgColor !== 'string') return undefined;
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(bgColor.trim());
  if (m === null) return undefined;
  const [r, g, b] = [m[1]!, m[2]!, m[3]!].map((h) => Number.parseInt(h, 16)) as [number, number, number];
  return Math.sqrt(0.299 * r * r + 0.587 * g * g + 0.114 * b * b) < 120 ? 'dark' : 'light';
}

/** The launch as the fragment's parameters describe it. */
export function launchFromParams(params: Record<string, string>): Launch {
  const launch: Launch = { initData: params.tgWebAppData ?? '' };
  if (params.tgWebAppPlatform) launch.platform = params.tgWebAppPlatform;
  if (params.tgWebAppVersion) launch.version = params.tgWebAppVersion;
  if (params.tgWebAppFullscreen !== undefined) launch.isFullscreen = params.tgWebAppFullscreen === '1';
  if (params.tgWebAppThemeParams) {
    try {
      const scheme = colorSchemeOf((JSON.parse(params.tgWebAppThemeParams) as Record<string, unknown>)?.bg_color);
      if (scheme !== undefined) launch.colorScheme = scheme;
    } catch {
      // Not JSON: the scheme stays unknown.
    }
  }
  return launch;
}

/** The part of `Telegram.WebApp` read at launch. */
export interface WebAppLaunchView {
  initData?: unknown;
  platform?: unknown;
  version?: unknown;
  colorScheme?: unknown;
  isFullscreen?: unknown;
  isExpanded?: unknown;
  viewportHeight?: unknown;
}

/** The launch as `Telegram.WebApp` reports it, over the fragment's where it says nothing. */
export function launchFromWebApp(w: WebAppLaunchView, fallback: Launch): Launch {
  const launch: Launch = { ...fallback };
  if (typeof w.initData === 'string' && w.initData !== '') launch.initData = w.initData;
  if (typeof w.platform === 'string' && w.platform !== '' && w.platform !== 'unknown') launch.platform = w.platform;
  if (typeof w.version === 'string' && w.version !== '') launch.version = w.version;
  if (w.colorScheme === 'light' || w.colorScheme === 'dark') launch.colorScheme = w.colorScheme;
  if (typeof w.isFullscreen === 'boolean') launch.isFullscreen = w.isFullscreen;
  if (typeof w.isExpanded === 'boolean') launch.isExpanded = w.isExpanded;
  if (typeof w.viewportHeight === 'number' && Number.isFinite(w.viewportHeight))
    launch.viewportHeight = Math.round(w.viewportHeight);
  return launch;
}
