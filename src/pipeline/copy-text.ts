// Encoding of events rows in PostgreSQL's COPY text format. Workers produce these bytes so the
// main thread only forwards them to the database.
import type { Channel } from '../base/model.js';
import type { NormalizedEvent } from './event.js';

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A text value; NUL has already been removed by the repairs. */
export function copyText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!) : s;
}

/** A jsonb value: JSON text escapes control characters itself, so only backslashes remain. */
function copyJson(json: string | null): string {
  if (json === null) return '\\N';
  return json.includes('\\') ? json.replaceAll('\\', '\\\\') : json;
}

export interface RowContext {
  projectId: string;
  botId: string;
  receivedAt: string;
  channel: Channel;
}

/** One row of COPY text, newline included; `summarized`: the request's report summary holds it (summary.ts). */
export function eventRow(ctx: RowContext, ev: NormalizedEvent, summarized: boolean): string {
  return (
    `${ctx.projectId}\t${ctx.botId}\t${ev.eventId}\t${copyText(ev.eventName)}\t${ev.eventType}\t${ev.eventDate}\t${ctx.receivedAt}\t` +
    `${ev.platformUserId ?? '\\N'}\t${ev.origin}\t${ctx.channel}\t${ev.text === null ? '\\N' : copyText(ev.text)}\t` +
    `${copyJson(ev.propsString)}\t${copyJson(ev.propsLong)}\t${copyJson(ev.propsFloat)}\t${copyJson(ev.propsBool)}\t${copyJson(ev.tg)}\tt\t${summarized ? 't' : 'f'}\n`
  );
}

/**
 * Rows encoded straight into one growing buffer: about three times cheaper than concatenating a
 * string and encoding it at the end. The buffer owns its memory, so it can move between threads.
 */
export class RowBuffer {
  private buf: Buffer;
  private len = 0;
  rows = 0;

  constructor(estimateBytes: number) {
    // Small batches take memory from Node's pool (cheap); a worker copies them before moving.
    this.buf =
      estimateBytes < 32_768
        ? Buffer.allocUnsafe(Math.max(1024, estimateBytes))
        : Buffer.allocUnsafeSlow(estimateBytes);
  }

  push(row: string): void {
    // A UTF-16 code unit never takes more than three UTF-8 bytes.
    const need = this.len + row.length * 3;
    if (need > this.buf.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(need, this.buf.length * 2, 32_768));
      this.buf.copy(bigger, 0, 0, this.len);
      this.buf = bigger;
    }
    this.len += this.buf.write(row, this.len);
    this.rows++;
  }

  bytes(): Uint8Array {
    // An empty view would still carry (and a thread message copy) the whole slab under it.
    if (this.len === 0) return new Uint8Array(0);
    // Far more room than rows (a long body of few events, or the last doubling): the rows are
    // copied out, so that what moves and is held (and counted) is what they take.
    if (this.buf.length - this.len > 65_536 && this.buf.length > 2 * this.len)
      return new Uint8Array(this.buf.subarray(0, this.len));
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.len);
  }
}

export interface QuarantineContext extends RowContext {
  connection: string;
  /** The verified initData user (webapp endpoint). */
  userId: string | null;
}

export interface QuarantinedEvent {
  /** As sent (cut), null when none. */
  eventId: string | null;
  codes: string[];
  /** JSON text of the event's diagnostics. */
  diagnostics: string;
  /** JSON text of the event as sent, cut when `truncated`. */
  event: string;
  truncated: boolean;
}

/** One row of COPY text for the quarantine, newline included. */
export function quarantineRow(ctx: QuarantineContext, q: QuarantinedEvent): string {
  return (
    `${ctx.projectId}\t${ctx.botId}\t${ctx.channel}\t${copyText(ctx.connection)}\t${ctx.userId ?? '\\N'}\t${ctx.receivedAt}\t` +
    `${q.eventId === null ? '\\N' : copyText(q.eventId)}\t{${q.codes.join(',')}}\t${copyJson(q.diagnostics)}\t${copyText(q.event)}\t${q.truncated ? 't' : 'f'}\n`
  );
}
