// Encoding of events rows in PostgreSQL's COPY text format. Workers produce these bytes so the
// main thread only forwards them to the database.
import type { NormalizedEvent } from './event.js';

/** Column order of every COPY into `events`; `billed` comes last so a row's prefix can be completed later. */
export const EVENT_COLUMNS = [
  'project_id', 'bot_id', 'event_id', 'event_name', 'event_type', 'event_date', 'received_at',
  'platform_user_id', 'origin', 'channel', 'text', 'props_string', 'props_long', 'props_float',
  'props_bool', 'tg', 'billed',
] as const;

export type Channel = 'bot_api' | 'webapp';

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A text value; NUL has already been removed by the repairs. */
export function copyText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!) : s;
}

/** A jsonb value: JSON.stringify already escapes control characters, so only backslashes remain. */
function copyJson(obj: Record<string, unknown> | null): string {
  if (obj === null) return '\\N';
  const json = JSON.stringify(obj);
  return json.includes('\\') ? json.replaceAll('\\', '\\\\') : json;
}

export interface RowContext {
  projectId: string;
  botId: string;
  receivedAt: string;
  channel: Channel;
}

/** Everything of a row except the `billed` column and the newline. */
export function rowPrefix(ctx: RowContext, ev: NormalizedEvent): string {
  return (
    `${ctx.projectId}\t${ctx.botId}\t${ev.eventId}\t${copyText(ev.eventName)}\t${ev.eventType}\t${ev.eventDate}\t${ctx.receivedAt}\t` +
    `${ev.platformUserId ?? '\\N'}\t${ev.origin}\t${ctx.channel}\t${ev.text === null ? '\\N' : copyText(ev.text)}\t` +
    `${copyJson(ev.propsString)}\t${copyJson(ev.propsLong)}\t${copyJson(ev.propsFloat)}\t${copyJson(ev.propsBool)}\t${copyJson(ev.tg)}\t`
  );
}

export function completeRow(prefix: string, billed: boolean): string {
  return billed ? `${prefix}t\n` : `${prefix}f\n`;
}
