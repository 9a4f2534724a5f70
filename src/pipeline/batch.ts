// One request's events, from parsed JSON to COPY-ready rows, counts and diagnostics.
// Pure: the same function runs in a worker, on the main thread and in unit tests.
import type { ErrorCode } from '../errors.js';
import { DiagnosticSink, type Diagnostic, type DiagnosticCode } from './diagnostics.js';
import { type Channel, eventRow, RowBuffer, type RowContext } from './copy-text.js';
import { isUserId, type Mode, normalizeEvent, parseEventId, diagnosticId } from './event.js';
import { repairString, truncateCodePoints } from './strings.js';

export const MAX_EVENTS = 1000;

export interface Refusal {
  code: ErrorCode;
  message?: string;
  details?: Record<string, unknown>;
}

/** A profile to upsert; fields left undefined are not touched, so a bare sighting keeps a known name. */
export interface UserSeen {
  id: string;
  username?: string | null;
  firstName?: string | null;
  lastName?: string | null;
  languageCode?: string | null;
  isPremium?: boolean | null;
}

export interface BotSnapshot {
  messengerBotId: string | null;
  name: string | null;
  description: string | null;
  starsAmount: number | null;
}

/** An event carrying a messenger action: billed only if its connection reported the action first. */
export interface ActionRef {
  key: string;
  eventId: string;
}

export interface BatchResult {
  accepted: number;
  rejected: number;
  duplicated: number;
  diagnostics: Diagnostic[];
  diagnosticsTruncated: boolean;
  diagnosticCounts: Partial<Record<DiagnosticCode, number>>;
  /** COPY text of every accepted event, billed = true. */
  rows: Uint8Array;
  rowCount: number;
  actions: ActionRef[];
  /** Users seen in accepted events and sent without a profile: a bare row (first/last seen) each. */
  userIds: string[];
  /** Profiles to upsert (users[] on endpoint B, the initData user on endpoint A). */
  profiles: UserSeen[];
  bot: BotSnapshot | null;
}

export type BatchOutcome = { ok: true; batch: BatchResult } | { ok: false; refusal: Refusal };

export interface BatchContext extends RowContext {
  channel: Channel;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkEventsArray(events: unknown): Refusal | null {
  if (!Array.isArray(events)) return { code: 'events_invalid', message: '"events" must be an array of events.' };
  if (events.length === 0) return { code: 'events_invalid', message: '"events" is empty; send at least one event.' };
  if (events.length > MAX_EVENTS) {
    return { code: 'events_invalid', message: `"events" holds ${events.length} events; at most ${MAX_EVENTS} are allowed per request.`, details: { count: events.length, max: MAX_EVENTS } };
  }
  return null;
}

const PARSE_TIME_FIELDS = ['eventId', 'eventDate', 'eventType', 'eventOrigin'] as const;

/** Endpoint B: the fields the spec requires at parse time make the whole request fail. */
function checkParseTime(events: unknown[]): Refusal | null {
  for (let i = 0; i < events.length; i++) {
    const ev = events[i];
    if (!isObject(ev)) return { code: 'event_invalid', message: `events[${i}] is not a JSON object; nothing was stored.`, details: { index: i } };
    for (const field of PARSE_TIME_FIELDS) {
      const v = ev[field];
      if (v === undefined || v === null) {
        return { code: 'event_invalid', message: `events[${i}].${field} is required; nothing was stored.`, details: { index: i, field } };
      }
      if (typeof v !== 'string') {
        return { code: 'event_invalid', message: `events[${i}].${field} must be a string; nothing was stored.`, details: { index: i, field } };
      }
    }
  }
  return null;
}

function runEvents(events: unknown[], mode: Mode, ctx: BatchContext, webappUserId: string | null, diag: DiagnosticSink, sizeHint: number) {
  const seen = new Set<string>();
  const userIds = new Set<string>();
  const actions: ActionRef[] = [];
  const rows = new RowBuffer(sizeHint);
  let accepted = 0;
  let rejected = 0;
  let duplicated = 0;
  for (const raw of events) {
    if (!isObject(raw)) {
      diag.add(null, 'event_invalid', 'event', 'the event is not a JSON object');
      rejected++;
      continue;
    }
    const eventId = parseEventId(raw.eventId);
    if (eventId !== null) {
      // The first occurrence of an id wins, whatever becomes of it.
      if (seen.has(eventId)) {
        duplicated++;
        continue;
      }
      seen.add(eventId);
    }
    if (eventId === null) {
      diag.add(diagnosticId(raw.eventId), 'event_id_invalid', 'event_id', 'eventId must be a UUID such as 0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b');
    }
    const ev = normalizeEvent(raw, eventId ?? '', mode, diag);
    if (ev === null || eventId === null) {
      rejected++;
      continue;
    }
    if (webappUserId !== null) ev.platformUserId = webappUserId;
    accepted++;
    userIds.add(ev.platformUserId!);
    rows.push(eventRow(ctx, ev));
    if (ev.actionKey !== null) actions.push({ key: ev.actionKey, eventId });
  }
  return { accepted, rejected, duplicated, rows, actions, userIds };
}

function finish(diag: DiagnosticSink, r: ReturnType<typeof runEvents>, profiles: UserSeen[], bot: BotSnapshot | null): BatchResult {
  for (const p of profiles) r.userIds.delete(p.id);
  return {
    accepted: r.accepted,
    rejected: r.rejected,
    duplicated: r.duplicated,
    diagnostics: diag.items,
    diagnosticsTruncated: diag.truncated,
    diagnosticCounts: diag.counts,
    rows: r.rows.bytes(),
    rowCount: r.rows.rows,
    actions: r.actions,
    userIds: [...r.userIds],
    profiles,
    bot,
  };
}

/** Room for the rows of `events` events: about what their JSON takes, plus the columns we add. */
const sizeHint = (events: unknown[], bodyBytes: number) => bodyBytes + events.length * 160;

/** Endpoint B: `{events, users?, bot?, version?}`; `bodyBytes` sizes the row buffer. */
export function processServerBatch(body: unknown, ctx: BatchContext, bodyBytes = 0): BatchOutcome {
  if (!isObject(body)) return { ok: false, refusal: { code: 'invalid_body' } };
  if (body.version !== undefined && body.version !== '1') return { ok: false, refusal: { code: 'unsupported_version' } };
  const bad = checkEventsArray(body.events) ?? checkParseTime(body.events as unknown[]);
  if (bad !== null) return { ok: false, refusal: bad };
  const diag = new DiagnosticSink();
  const r = runEvents(body.events as unknown[], 'server', ctx, null, diag, sizeHint(body.events as unknown[], bodyBytes));
  const profiles = body.users === undefined || body.users === null ? [] : parseProfiles(body.users, diag);
  const bot = body.bot === undefined || body.bot === null ? null : parseBotSnapshot(body.bot, diag);
  return { ok: true, batch: finish(diag, r, profiles, bot) };
}

/** Endpoint A: the events of `{botId, auth, events}`; the user and profile come from verified initData. */
export function processWebappBatch(events: unknown, ctx: BatchContext, user: UserSeen, bodyBytes = 0): BatchOutcome {
  const bad = checkEventsArray(events);
  if (bad !== null) return { ok: false, refusal: bad };
  const diag = new DiagnosticSink();
  const r = runEvents(events as unknown[], 'webapp', ctx, user.id, diag, sizeHint(events as unknown[], bodyBytes));
  return { ok: true, batch: finish(diag, r, [user], null) };
}

const PROFILE_CHARS = 256;

/** undefined: absent; null: explicitly empty; false: invalid. */
function profileString(v: unknown): string | null | undefined | false {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (typeof v !== 'string') return false;
  const s = repairString(v).value;
  return truncateCodePoints(s, PROFILE_CHARS) === null ? s : false;
}

function messengerId(v: unknown): string | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v > 0 ? String(v) : null;
  if (typeof v === 'string') return isUserId(v) ? v : null;
  return null;
}

function parseProfiles(users: unknown, diag: DiagnosticSink): UserSeen[] {
  if (!Array.isArray(users)) {
    diag.add(null, 'user_profile_invalid', 'users', 'users must be an array of profiles; ignored');
    return [];
  }
  const out: UserSeen[] = [];
  for (let i = 0; i < users.length; i++) {
    const u = users[i];
    const id = isObject(u) ? messengerId(u.messengerUserId) : null;
    if (!isObject(u) || id === null) {
      diag.add(null, 'user_profile_invalid', `users[${i}]`, 'a profile needs messengerUserId, a positive integer; skipped');
      continue;
    }
    const username = profileString(u.username);
    const firstName = profileString(u.firstName);
    const lastName = profileString(u.lastName);
    const languageCode = profileString(u.languageCode);
    const isPremium = u.isPremium;
    if (username === false || firstName === false || lastName === false || languageCode === false ||
        (isPremium !== undefined && isPremium !== null && typeof isPremium !== 'boolean')) {
      diag.add(null, 'user_profile_invalid', `users[${i}]`, `username, firstName, lastName and languageCode must be strings of at most ${PROFILE_CHARS} characters and isPremium a boolean; skipped`);
      continue;
    }
    out.push({ id, username, firstName, lastName, languageCode, isPremium: isPremium as boolean | null | undefined });
  }
  return out;
}

function parseBotSnapshot(bot: unknown, diag: DiagnosticSink): BotSnapshot | null {
  const invalid = () => {
    diag.add(null, 'bot_snapshot_invalid', 'bot', 'bot must be {messengerBotId?, name?, description?, starsAmount?} with string texts and numeric ids; ignored');
    return null;
  };
  if (!isObject(bot)) return invalid();
  const name = profileString(bot.name);
  const description = bot.description === undefined || bot.description === null ? null
    : typeof bot.description === 'string' ? repairString(truncateCodePoints(bot.description, 4096) ?? bot.description).value : false;
  const stars = bot.starsAmount;
  const mid = bot.messengerBotId === undefined || bot.messengerBotId === null ? null : messengerId(bot.messengerBotId);
  if (name === false || description === false || (mid === null && bot.messengerBotId != null) ||
      (stars !== undefined && stars !== null && !(typeof stars === 'number' && Number.isFinite(stars)))) {
    return invalid();
  }
  return { messengerBotId: mid, name: name ?? null, description, starsAmount: (stars as number | null | undefined) ?? null };
}
