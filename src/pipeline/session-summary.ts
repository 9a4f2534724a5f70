// What a request's stored events add to the sessions report, beside its report summary (summary.ts) and in a column of
// its own (report_summaries.sessions): an older build reads the summary column alone and never meets these records.
// An event has a record when it is of the webapp endpoint, its propsString.session_id is a UUID the stored text holds
// as sent, its row is summarized, and its eventDate falls in years 1-9999 UTC; the aggregator reads the rows no
// summary holds from the table by the same rule (src/reports/session-sql.ts).
//
// A section a request: u8 version, 16 bytes project id, f64 received_at (ms since 1970), u32 records; then each
// record: f64 user id, 16 bytes session id, f64 eventDate (ms since 1970), u8 kind (SessionKind), u8 byte length and
// the ASCII of the platform (app_open only; one of PLATFORMS, else `other`).

import { parseUuid } from './ids.js';
import { hex, uuidBytes, uuidText } from './summary.js';

const VERSION = 1;
const HEADER = 1 + 16 + 8 + 4;
const RECORD = 8 + 16 + 8 + 1 + 1;

/** app_open starts a session, app_close ends it, any other event of it is 0. */
export type SessionKind = 0 | 1 | 2;
const KINDS: ReadonlyMap<string, SessionKind> = new Map([
  ['app_open', 1],
  ['app_close', 2],
]);
/** The platforms the messenger names (Telegram.WebApp.platform); any other word counts as `other`. */
export const PLATFORMS: readonly string[] = [
  'android',
  'android_x',
  'ios',
  'macos',
  'tdesktop',
  'weba',
  'webk',
  'unigram',
  'web',
  'unknown',
  'other',
];
const PLATFORM_SET = new Set(PLATFORMS);
/** A word a platform could be: what is counted, as itself or as `other`. */
const WORD = /^[a-z0-9_]{1,32}$/;
/** The eventDates a session record may carry: what JavaScript and PostgreSQL both write as ISO 8601 (years 1-9999). */
export const FIRST_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const END_MS = Date.parse('+010000-01-01T00:00:00.000Z');

/** A mini-app session's part of an event. */
export interface SessionMark {
  /** Lowercase UUID. */
  id: string;
  /** eventDate, ms since 1970. */
  at: number;
  kind: SessionKind;
  platform: string | null;
}

/** The platform a word counts as, or null for none. */
export const platformOf = (word: unknown): string | null =>
  typeof word === 'string' && WORD.test(word) ? (PLATFORM_SET.has(word) ? word : 'other') : null;

/**
 * The session an event belongs to, from its propsString as sent and as stored (JSON text): null unless it is of the
 * webapp endpoint, its session_id is a UUID the stored text holds as sent, and its date is in range. The platform
 * counts on app_open, when the stored text holds it as sent.
 */
export function sessionMark(
  channel: string,
  sent: unknown,
  stored: { eventName: string; eventDate: string; propsString: string | null },
): SessionMark | null {
  if (channel !== 'webapp' || stored.propsString === null || typeof sent !== 'object' || sent === null) return null;
  const sentId = (sent as Record<string, unknown>).session_id;
  const id = parseUuid(sentId);
  if (id === null || !stored.propsString.includes(`"session_id":"${sentId}"`)) return null;
  const at = Date.parse(stored.eventDate);
  if (!(at >= FIRST_MS && at < END_MS)) return null;
  const kind = KINDS.get(stored.eventName) ?? 0;
  const word = (sent as Record<string, unknown>).platform;
  // A word first: the stored text is searched only for one.
  const counted = kind === 1 ? platformOf(word) : null;
  const platform = counted !== null && stored.propsString.includes(`"platform":"${word}"`) ? counted : null;
  return { id, at, kind, platform };
}

/** One request's section of session records. */
export class SessionSummaryWriter {
  private readonly parts: Buffer[] = [];
  private count = 0;

  constructor(
    private readonly projectId: string,
    private readonly receivedAt: string,
  ) {}

  add(user: number, m: SessionMark): void {
    const platform = m.platform ?? '';
    const b = Buffer.allocUnsafe(RECORD + platform.length);
    b.writeDoubleLE(user, 0);
    uuidBytes(m.id).copy(b, 8);
    b.writeDoubleLE(m.at, 24);
    b[32] = m.kind;
    b[33] = platform.length;
    b.write(platform, RECORD, 'latin1');
    this.parts.push(b);
    this.count++;
  }

  /** The section; empty when no record was added. */
  bytes(): Uint8Array {
    if (this.count === 0) return new Uint8Array(0);
    const head = Buffer.allocUnsafe(HEADER);
    head[0] = VERSION;
    uuidBytes(this.projectId).copy(head, 1);
    head.writeDoubleLE(Date.parse(this.receivedAt), 17);
    head.writeUInt32LE(this.count, 25);
    const all = Buffer.concat([head, ...this.parts]);
    return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
  }
}

export interface SessionSection {
  projectId: string;
  /** ms since 1970. */
  receivedAt: number;
}

export class SessionSummaryFormatError extends Error {
  constructor(message: string) {
    super(`session summary unreadable: ${message}`);
    this.name = 'SessionSummaryFormatError';
  }
}

/**
 * Reads a commit's session records. `section` is asked first of each section: false skips its records. Throws
 * SessionSummaryFormatError on bytes the writer could not have made: what the fold's SQL takes is all that passes.
 */
export function readSessions(
  bytes: Uint8Array,
  section: (s: SessionSection) => boolean,
  record: (user: number, m: SessionMark) => void,
): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > bytes.byteLength) throw new SessionSummaryFormatError(`cut short at byte ${at}`);
  };
  while (at < bytes.byteLength) {
    need(HEADER);
    if (bytes[at] !== VERSION) throw new SessionSummaryFormatError(`version ${bytes[at]} at byte ${at}`);
    const s = { projectId: uuidText(hex(bytes, at + 1)), receivedAt: view.getFloat64(at + 17, true) };
    const count = view.getUint32(at + 25, true);
    at += HEADER;
    // A time a Date holds (the erasure writes it back as one).
    if (!(Math.abs(s.receivedAt) <= 8.64e15) || count > (bytes.byteLength - at) / RECORD)
      throw new SessionSummaryFormatError(`section at byte ${at - HEADER}`);
    const wanted = section(s);
    for (let i = 0; i < count; i++) {
      need(RECORD);
      const user = view.getFloat64(at, true);
      const eventAt = view.getFloat64(at + 24, true);
      const kind = bytes[at + 32]!;
      const n = bytes[at + 33]!;
      need(RECORD + n);
      const platform = n === 0 ? null : text.toString('latin1', at + RECORD, at + RECORD + n);
      if (
        !Number.isSafeInteger(user) ||
        !(eventAt >= FIRST_MS && eventAt < END_MS) ||
        kind > 2 ||
        (platform !== null && !PLATFORM_SET.has(platform))
      )
        throw new SessionSummaryFormatError(`record at byte ${at}`);
      if (wanted) record(user, { id: uuidText(hex(bytes, at + 8)), at: eventAt, kind: kind as SessionKind, platform });
      at += RECORD + n;
    }
  }
}

/** The records without those of `users` of `projectId` (an erasure); null when nothing is left. */
export function sessionsWithoutUsers(
  bytes: Uint8Array,
  projectId: string,
  users: ReadonlySet<number>,
): Uint8Array | null {
  const out: Uint8Array[] = [];
  let writer: SessionSummaryWriter | null = null;
  let current = '';
  const flush = () => {
    if (writer !== null) out.push(writer.bytes());
  };
  readSessions(
    bytes,
    (s) => {
      flush();
      current = s.projectId;
      writer = new SessionSummaryWriter(s.projectId, new Date(s.receivedAt).toISOString());
      return true;
    },
    (user, m) => {
      if (current !== projectId || !users.has(user)) writer!.add(user, m);
    },
  );
  flush();
  const kept = Buffer.concat(out);
  return kept.byteLength === 0 ? null : new Uint8Array(kept.buffer, kept.byteOffset, kept.byteLength);
}
