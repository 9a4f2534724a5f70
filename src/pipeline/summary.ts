// What a request's stored events add to the reports, in a few bytes an event: its UTC day, type and user, and the
// rare parts (a campaign, a payment's id). The writer stores each commit's summaries beside its rows
// (report_summaries), and the report aggregator folds those instead of reading the events again: reading, grouping
// and converting dates of every stored row cost PostgreSQL about as much as 5-7% of what storing it did.
//
// An event is summarized only when this describes it exactly as PostgreSQL would read its row; one that cannot be
// (a user id past 2^53) is stored with summarized = false, and the aggregator reads it from the table instead.
//
// A summary is a sequence of sections, one a request:
//   u8 version, 16 bytes project id, f64 received_at (ms since 1970), u32 records, then each record:
//   f64 user id (NaN: none), i32 UTC day (days since 1970-01-01), u8 event type (index in SUMMARY_TYPES), u8 flags;
//   flags & CAMPAIGN: u16 byte length and the UTF-8 of the campaign (start_param, at most 256 code points);
//   flags & PAYMENT: the 16 bytes of the event id (a successful_payment or refunded_payment, read again by id).
import { isUtf8 } from 'node:buffer';
import { EVENT_TYPES } from './event.js';
import { truncateCodePoints } from './strings.js';

const VERSION = 1;
const HEADER = 1 + 16 + 8 + 4;
const RECORD = 8 + 4 + 1 + 1;
const CAMPAIGN = 1;
const PAYMENT = 2;
/** Event types by the index a record stores: EVENT_TYPES' order, which is append only. */
export const SUMMARY_TYPES: readonly string[] = [...EVENT_TYPES];
const TYPE_INDEX = new Map<string, number>(SUMMARY_TYPES.map((t, i) => [t, i]));
/** Names whose events the revenue report reads again, by id. */
export const PAYMENT_NAMES: ReadonlySet<string> = new Set(['successful_payment', 'refunded_payment']);
/** A campaign is the first 256 code points of start_param (what the reports keep). */
export const CAMPAIGN_MAX_CHARS = 256;
/** The most UTF-8 bytes those code points take. */
const CAMPAIGN_MAX_BYTES = CAMPAIGN_MAX_CHARS * 4;

/** Days since 1970-01-01 of a proleptic Gregorian date (year 0 is 1 BC), exact for every year. */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

/** The UTC days of the dates the pipeline stores (years 0001-9999, an offset moving them a day either way). */
const MIN_DAY = daysFromCivil(0, 12, 31);
const MAX_DAY = daysFromCivil(10000, 1, 1);

const num = (s: string, at: number, n: number) => Number(s.slice(at, at + n));

/**
 * The UTC day of a normalized eventDate (dates.ts: YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM)), as PostgreSQL's
 * (event_date AT TIME ZONE 'UTC')::date: the offset moves the time by whole minutes, so seconds never decide it.
 */
export function utcDay(date: string): number {
  const days = daysFromCivil(num(date, 0, 4), num(date, 5, 2), num(date, 8, 2));
  let minutes = num(date, 11, 2) * 60 + num(date, 14, 2);
  if (!date.endsWith('Z')) {
    const sign = date.charCodeAt(date.length - 6) === 45 /* - */ ? -1 : 1;
    minutes -= sign * (num(date, date.length - 5, 2) * 60 + num(date, date.length - 2, 2));
  }
  return days + Math.floor(minutes / 1440);
}

/** What the summary needs of a stored event. */
export interface SummaryEvent {
  eventId: string;
  eventName: string;
  eventType: string;
  eventDate: string;
  platformUserId: string | null;
  /** tg.start_param as stored (the signed one on webapp). */
  startParam: string | null;
}

/** A UUID's 16 bytes, and back (the session records beside a summary use them too). */
export const uuidBytes = (id: string) => Buffer.from(id.replaceAll('-', ''), 'hex');

/** One request's section, built as its events are accepted. */
export class SummaryWriter {
  private buf: Buffer;
  private len = HEADER;
  private count = 0;

  constructor(projectId: string, receivedAt: string, events: number) {
    this.buf = Buffer.allocUnsafe(HEADER + RECORD * Math.max(1, events));
    this.buf[0] = VERSION;
    uuidBytes(projectId).copy(this.buf, 1);
    this.buf.writeDoubleLE(Date.parse(receivedAt), 17);
  }

  /** Adds the event; false when it cannot be described exactly (its row must say summarized = false). */
  add(ev: SummaryEvent): boolean {
    const type = TYPE_INDEX.get(ev.eventType);
    const user = ev.platformUserId === null ? Number.NaN : Number(ev.platformUserId);
    if (type === undefined || (ev.platformUserId !== null && !Number.isSafeInteger(user))) return false;
    let campaign = ev.startParam === null || ev.startParam === '' ? null : ev.startParam;
    if (campaign !== null) campaign = truncateCodePoints(campaign, CAMPAIGN_MAX_CHARS) ?? campaign;
    this.addRecord(user, utcDay(ev.eventDate), type, campaign, PAYMENT_NAMES.has(ev.eventName) ? ev.eventId : null);
    return true;
  }

  /** Adds a record as readSummary gives it. */
  addRecord(user: number, day: number, type: number, campaign: string | null, paymentId: string | null): void {
    this.reserve(RECORD + (campaign === null ? 0 : 2 + Buffer.byteLength(campaign)) + (paymentId === null ? 0 : 16));
    const b = this.buf;
    let at = this.len;
    b.writeDoubleLE(user, at);
    b.writeInt32LE(day, at + 8);
    b[at + 12] = type;
    b[at + 13] = (campaign === null ? 0 : CAMPAIGN) | (paymentId === null ? 0 : PAYMENT);
    at += RECORD;
    if (campaign !== null) {
      const n = b.write(campaign, at + 2);
      b.writeUInt16LE(n, at);
      at += 2 + n;
    }
    if (paymentId !== null) {
      uuidBytes(paymentId).copy(b, at);
      at += 16;
    }
    this.len = at;
    this.count++;
  }

  /** The section; empty when no event was added. */
  bytes(): Uint8Array {
    if (this.count === 0) return new Uint8Array(0);
    this.buf.writeUInt32LE(this.count, 25);
    // Far more room than bytes (doubled for long campaigns): copied out, so what moves and is counted is what it takes.
    if (this.buf.length - this.len > 4096 && this.buf.length > 2 * this.len)
      return new Uint8Array(this.buf.subarray(0, this.len));
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.len);
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.len + n, this.buf.length * 2));
    this.buf.copy(bigger, 0, 0, this.len);
    this.buf = bigger;
  }
}

/**
 * One record as read back, its parts as arguments (a busy window reads millions): the user (NaN: none), the UTC day,
 * the type's index in SUMMARY_TYPES, the campaign, and the event id of a payment or refund.
 */
export type RecordVisitor = (
  user: number,
  day: number,
  typeIndex: number,
  campaign: string | null,
  paymentId: string | null,
) => void;

export interface SummarySection {
  projectId: string;
  /** ms since 1970. */
  receivedAt: number;
  records: number;
}

export class SummaryFormatError extends Error {
  constructor(message: string) {
    super(`report summary unreadable: ${message}`);
    this.name = 'SummaryFormatError';
  }
}

export const hex = (b: Uint8Array, at: number) => Buffer.from(b.buffer, b.byteOffset + at, 16).toString('hex');
export const uuidText = (h: string) =>
  `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;

/**
 * Reads a commit's summaries. `section` is asked first of each section: false skips its records. Throws
 * SummaryFormatError on bytes this module could not have written.
 */
export function readSummary(bytes: Uint8Array, section: (s: SummarySection) => boolean, record: RecordVisitor): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > bytes.byteLength) throw new SummaryFormatError(`cut short at byte ${at}`);
  };
  while (at < bytes.byteLength) {
    need(HEADER);
    if (bytes[at] !== VERSION) throw new SummaryFormatError(`version ${bytes[at]} at byte ${at}`);
    const s = {
      projectId: uuidText(hex(bytes, at + 1)),
      receivedAt: view.getFloat64(at + 17, true),
      records: view.getUint32(at + 25, true),
    };
    at += HEADER;
    // Checked before anything is sized or folded by them: a count no bytes could hold, a time that is no time.
    // A time a Date holds (withoutUsers writes it back as one).
    if (!(Math.abs(s.receivedAt) <= 8.64e15) || s.records > (bytes.byteLength - at) / RECORD)
      throw new SummaryFormatError(`section at byte ${at - HEADER}`);
    const wanted = section(s);
    for (let i = 0; i < s.records; i++) {
      need(RECORD);
      const flags = bytes[at + 13]!;
      const typeIndex = bytes[at + 12]!;
      if (typeIndex >= SUMMARY_TYPES.length || flags > (CAMPAIGN | PAYMENT))
        throw new SummaryFormatError(`record at byte ${at}`);
      const user = view.getFloat64(at, true);
      const day = view.getInt32(at + 8, true);
      // What the fold's SQL takes: a bigint user (or none) and a date. Anything else would fail the window of every
      // project on each retry, where this error has the summary dropped instead.
      if (!(Number.isNaN(user) || Number.isSafeInteger(user)) || day < MIN_DAY || day > MAX_DAY)
        throw new SummaryFormatError(`record at byte ${at}`);
      at += RECORD;
      let campaign: string | null = null;
      let paymentId: string | null = null;
      if (flags & CAMPAIGN) {
        need(2);
        const n = view.getUint16(at, true);
        need(2 + n);
        // A campaign is a text key of the report tables: PostgreSQL's text holds no NUL, and a btree key no more than
        // 2,704 bytes (bytes that are not UTF-8 would each decode to three). Either would fail the fold, as above;
        // an empty one the writer never makes.
        const campaignBytes = bytes.subarray(at + 2, at + 2 + n);
        if (n === 0 || n > CAMPAIGN_MAX_BYTES || campaignBytes.includes(0) || !isUtf8(campaignBytes))
          throw new SummaryFormatError(`campaign at byte ${at}`);
        if (wanted) campaign = text.toString('utf8', at + 2, at + 2 + n);
        at += 2 + n;
      }
      if (flags & PAYMENT) {
        need(16);
        if (wanted) paymentId = uuidText(hex(bytes, at));
        at += 16;
      }
      if (wanted) record(user, day, typeIndex, campaign, paymentId);
    }
  }
}

/**
 * The summary without the records of `users` (of `projectId`): an erasure must not leave them to be folded in later.
 * Returns null when nothing of it is left.
 */
export function withoutUsers(bytes: Uint8Array, projectId: string, users: ReadonlySet<number>): Uint8Array | null {
  const out: Uint8Array[] = [];
  let current: SummarySection | null = null;
  let writer: SummaryWriter | null = null;
  const flush = () => {
    if (writer !== null) out.push(writer.bytes());
  };
  readSummary(
    bytes,
    (s) => {
      flush();
      current = s;
      writer = new SummaryWriter(s.projectId, new Date(s.receivedAt).toISOString(), s.records);
      return true;
    },
    (user, day, typeIndex, campaign, paymentId) => {
      if (current!.projectId !== projectId || !users.has(user))
        writer!.addRecord(user, day, typeIndex, campaign, paymentId);
    },
  );
  flush();
  const kept = Buffer.concat(out);
  return kept.byteLength === 0 ? null : new Uint8Array(kept.buffer, kept.byteOffset, kept.byteLength);
}
