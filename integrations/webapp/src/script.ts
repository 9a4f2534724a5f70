// The script the service serves at /sdk/webapp.js: `<script src="…/sdk/webapp.js" data-bot-id="…" async>` and
// nothing else. Its options are the tag's data- attributes; the service is the origin the script came from. The
// instance is `window.tgIngest`, for custom events and opting out.
import { GROUPS, type Group, type TgIngest, tgIngest } from './index.js';

interface ScriptTag {
  src: string;
  dataset: Record<string, string | undefined>;
}

const doc = (globalThis as unknown as { document?: { currentScript?: ScriptTag | null } }).document;
// Only while the script first runs: read now.
const tag = doc?.currentScript ?? null;

/** `data-capture-page-views` → `capturePageViews` in the dataset. */
const datasetKey = (group: Group) => `capture${group[0]!.toUpperCase()}${group.slice(1)}`;

function start(): TgIngest | null {
  if (tag === null) return null;
  const data = tag.dataset;
  const botId = data.botId;
  if (botId === undefined || botId === '') {
    console.warn('tg-ingest: the script tag needs data-bot-id (the service bot id); nothing is captured');
    return null;
  }
  const capture: Partial<Record<Group, boolean>> = {};
  for (const group of GROUPS) {
    const v = data[datasetKey(group)];
    if (v !== undefined) capture[group] = v !== 'false' && v !== 'off' && v !== '0';
  }
  return tgIngest({
    baseUrl: data.baseUrl || new URL(tag.src).origin,
    botId,
    capture,
    pageViewQuery: data.pageViewQuery === 'true',
    ...(data.maxErrors !== undefined && /^\d{1,4}$/.test(data.maxErrors) ? { maxErrors: Number(data.maxErrors) } : {}),
  });
}

const instance = start();
if (instance !== null) (globalThis as unknown as { tgIngest?: TgIngest }).tgIngest = instance;
