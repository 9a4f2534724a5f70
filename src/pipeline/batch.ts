// One request's events, from parsed JSON to COPY-ready rows, counts and diagnostics.
// Pure: the same function runs in a worker, on the main thread and in unit tests.
import { isSuppressed } from './suppressed.js';
import type { Refusal } from '../base/errors.js';
import type { ActionRef, BotSnapshot, Channel, UserSeen } from '../base/model.js';
import type { StoredBatch } from '../writer/sink.js';
import { DiagnosticSink, type Diagnostic, type DiagnosticCounts } from './diagnostics.js';
import { eventRow, type QuarantineContext, quarantineRow, RowBuffer } from './copy-text.js';
import { sessionMark, SessionSummaryWriter } from './session-summary.js';
import { SummaryWriter } from './summary.js';
import { diagnosticId, normalizeEvent } from './event.js';
import { checkPlan, type PlanRef } from './plans.js';
import { parseUuid } from './ids.js';
import { deeperThan, isObject } from './json.js';
import { parseBotSnapshot, parseProfiles } from './profiles.js';

export const MAX_EVENTS = 1000;

export type { Refusal };

/**
 * One request's events as the pipeline leaves them: what the writer stores (StoredBatch), and what the answer and the
 * metrics say.
 */
export interface BatchResult extends StoredBatch {
  accepted: number;
  rejected: number;
  duplicated: number;
  diagnostics: Diagnostic[];
  diagnosticsTruncated: boolean;
  diagnosticCounts: DiagnosticCounts;
  /** Per error code: quarantined events that carry it. */
  quarantineCodes: Record<string, number>;
  /** Events for the live view, when someone watches the project (at most the sample asked for). */
  live: LiveEvent[] | null;
  /** Bytes of the decompressed body when it came compressed (0 otherwise): held while the request is, like its rows. */
  inflatedBytes: number;
}

export type LiveStatus = 'accepted' | 'rejected' | 'duplicated';

/** One event as the live view shows it. */
export interface LiveEvent {
  eventId: string | null;
  eventName: string | null;
  eventType: string | null;
  status: LiveStatus;
  diagnostics: Diagnostic[];
  event: unknown;
}

export type BatchOutcome = { ok: true; batch: BatchResult } | { ok: false; refusal: Refusal };

export interface BatchContext extends QuarantineContext {
  channel: Channel;
  /** bot_api: the bot's messenger id as configured, which a bot snapshot must match. */
  messengerBotId?: string | null;
  /** The project's tracking plan, if it has one. */
  plan?: PlanRef | null;
  /** How many events the live view wants from this batch (0 or absent: nobody watches). */
  liveSample?: number;
  /** The project's suppressed users, sorted (shared memory); their events and profiles are dropped. */
  suppressed?: BigInt64Array | null;
}

/** The event as sent, for the quarantine: JSON, cut to its first 64 KiB. */
export const QUARANTINE_EVENT_BYTES = 64 * 1024;

function asSent(raw: unknown): { event: string; truncated: boolean } {
  const json = JSON.stringify(raw) ?? 'null';
  if (json.length * 3 <= QUARANTINE_EVENT_BYTES || Buffer.byteLength(json) <= QUARANTINE_EVENT_BYTES)
    return { event: json, truncated: false };
  return {
    event: Buffer.from(json).subarray(0, QUARANTINE_EVENT_BYTES).toString('utf8').toWellFormed(),
    truncated: true,
  };
}

function checkEventsArray(events: unknown): Refusal | null {
  if (!Array.isArray(events)) return { code: 'events_invalid', message: '"events" must be an array of events.' };
  if (events.length === 0) return { code: 'events_invalid', message: '"events" is empty; send at least one event.' };
  if (events.length > MAX_EVENTS) {
    return {
      code: 'events_invalid',
      message: `"events" holds ${events.length} events; at most ${MAX_EVENTS} are allowed per request.`,
      details: { count: events.length, max: MAX_EVENTS },
    };
  }
  return null;
}

const PARSE_TIME_FIELDS = ['eventId', 'eventDate', 'eventType', 'eventOrigin'] as const;

/** bot_api: the fields the contract requires at parse time make the whole request fail. */
function checkParseTime(events: unknown[]): Refusal | null {
  for (let i = 0; i < events.length; i++) {
    const ev = events[i];
    if (!isObject(ev))
      return {
        code: 'event_invalid',
        message: `events[${i}] is not a JSON object; nothing was stored.`,
        details: { index: i },
      };
    for (const field of PARSE_TIME_FIELDS) {
      const v = ev[field];
      if (v === undefined || v === null) {
        return {
          code: 'event_invalid',
          message: `events[${i}].${field} is required; nothing was stored.`,
          details: { index: i, field },
        };
      }
      if (typeof v !== 'string') {
        return {
          code: 'event_invalid',
          message: `events[${i}].${field} must be a string; nothing was stored.`,
          details: { index: i, field },
        };
      }
    }
  }
  return null;
}

function runEvents(
  events: unknown[],
  ctx: BatchContext,
  webappUserId: string | null,
  diag: DiagnosticSink,
  sizeHint: number,
  /** webapp: the campaign the signed initData names (start_param), stored as the events' tg section. */
  webappStartParam: string | null = null,
) {
  const webappTg = webappStartParam ? JSON.stringify({ start_param: webappStartParam }) : null;
  const seen = new Set<string>();
  const userIds = new Set<string>();
  const actions: ActionRef[] = [];
  const rows = new RowBuffer(sizeHint);
  const summary = new SummaryWriter(ctx.projectId, ctx.receivedAt, events.length);
  const sessions = new SessionSummaryWriter(ctx.projectId, ctx.receivedAt);
  const quarantine = new RowBuffer(0);
  const quarantineCodes: Record<string, number> = {};
  const live: LiveEvent[] | null = (ctx.liveSample ?? 0) > 0 ? [] : null;
  const recheck: string[] = [];
  const received = new Date(ctx.receivedAt);
  const recheckBefore = Date.UTC(received.getUTCFullYear(), received.getUTCMonth(), 2);
  // Normalized UTC dates compare as text (same layout, four-digit years): no Date.parse per event.
  const recheckBeforeIso = new Date(recheckBefore).toISOString();
  const dueRecheck = (date: string) =>
    date.endsWith('Z') ? date < recheckBeforeIso : Date.parse(date) < recheckBefore;
  let accepted = 0;
  let rejected = 0;
  let duplicated = 0;
  const watch = (
    raw: unknown,
    status: LiveStatus,
    diagnostics: Diagnostic[],
    ev?: { eventName: string; eventType: string },
  ) => {
    if (live === null || live.length >= ctx.liveSample!) return;
    const r = isObject(raw) ? raw : {};
    live.push({
      eventId: typeof r.eventId === 'string' ? diagnosticId(r.eventId) : null,
      eventName: ev?.eventName ?? (typeof r.eventName === 'string' ? r.eventName.slice(0, 256) : null),
      eventType: ev?.eventType ?? (typeof r.eventType === 'string' ? r.eventType.slice(0, 64) : null),
      status,
      diagnostics,
      // As the quarantine keeps it: a long event is shown as the text of its first 64 KiB.
      event: ((a) => (a.truncated ? a.event : raw))(asSent(raw)),
    });
  };
  const reject = (raw: unknown, eventId: string | null, diagnostics: Diagnostic[]) => {
    rejected++;
    const codes = [...new Set(diagnostics.filter((d) => d.severity === 'error').map((d) => d.code))];
    for (const c of codes) quarantineCodes[c] = (quarantineCodes[c] ?? 0) + 1;
    quarantine.push(quarantineRow(ctx, { eventId, codes, diagnostics: JSON.stringify(diagnostics), ...asSent(raw) }));
    watch(raw, 'rejected', diagnostics);
  };
  // A suppressed user's events are dropped before anything else looks at them: neither stored nor quarantined
  // (whatever else is wrong with them), and the live view shows only that they were refused.
  const suppressed = (raw: unknown): boolean => {
    if (webappUserId !== null) return isSuppressed(ctx.suppressed, webappUserId);
    const id = isObject(raw) ? raw.platformUserId : undefined;
    return (typeof id === 'string' || typeof id === 'number') && isSuppressed(ctx.suppressed, String(id));
  };
  for (const raw of events) {
    diag.beginEvent();
    if (ctx.suppressed && suppressed(raw)) {
      const eventId = isObject(raw) ? raw.eventId : undefined;
      diag.add(
        diagnosticId(eventId),
        'user_suppressed',
        webappUserId !== null ? 'auth.initData.user' : 'platform_user_id',
        'this user asked for their data to be erased; their events are not kept',
      );
      rejected++;
      watch({ eventId }, 'rejected', diag.endEvent());
      continue;
    }
    if (!isObject(raw)) {
      diag.add(null, 'event_invalid', 'event', 'the event is not a JSON object');
      reject(raw, null, diag.endEvent());
      continue;
    }
    const eventId = parseUuid(raw.eventId);
    if (eventId !== null) {
      // The first occurrence of an id wins, whatever becomes of it.
      if (seen.has(eventId)) {
        duplicated++;
        watch(raw, 'duplicated', diag.endEvent());
        continue;
      }
      seen.add(eventId);
    }
    // How diagnostics name the event, worked out only when one is reported.
    const shownId = () => diagnosticId(raw.eventId);
    if (eventId === null) {
      diag.add(
        shownId(),
        'event_id_invalid',
        'event_id',
        'eventId must be a UUID such as 0b6f3a8e-5c1d-4e2a-9f7b-1c2d3e4f5a6b',
      );
    }
    const ev = normalizeEvent(raw, eventId ?? '', ctx.channel, diag, ctx.plan != null);
    if (ev === null || eventId === null || (ctx.plan != null && !checkPlan(ctx.plan, ev, ctx.channel, shownId, diag))) {
      reject(raw, shownId(), diag.endEvent());
      continue;
    }
    const diagnostics = diag.endEvent();
    if (webappUserId !== null) {
      ev.platformUserId = webappUserId;
      ev.tg = webappTg;
      ev.startParam = webappStartParam || null;
    }
    accepted++;
    userIds.add(ev.platformUserId!);
    const summarized = summary.add(ev);
    // A session's record only beside a summarized row: the others are read from the table, by the same rule.
    const session = summarized ? sessionMark(ctx.channel, raw.propsString, ev) : null;
    if (session !== null) sessions.add(Number(ev.platformUserId), session);
    rows.push(eventRow(ctx, ev, summarized));
    if (ev.actionKey !== null) actions.push({ key: ev.actionKey, eventId });
    if (dueRecheck(ev.eventDate)) recheck.push(eventId);
    watch(raw, 'accepted', diagnostics, ev);
  }
  return {
    accepted,
    rejected,
    duplicated,
    rows,
    summary,
    sessions,
    actions,
    userIds,
    quarantine,
    quarantineCodes,
    live,
    recheck,
  };
}

function finish(
  diag: DiagnosticSink,
  r: ReturnType<typeof runEvents>,
  profiles: UserSeen[],
  bot: BotSnapshot | null,
): BatchResult {
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
    summary: r.summary.bytes(),
    sessions: r.sessions.bytes(),
    actions: r.actions,
    userIds: [...r.userIds],
    profiles,
    bot,
    quarantine: r.quarantine.bytes(),
    quarantineCount: r.quarantine.rows,
    quarantineCodes: r.quarantineCodes,
    live: r.live,
    recheck: r.recheck,
    inflatedBytes: 0,
  };
}

/** Room for the rows of `events` events: about what their JSON takes, plus the columns we add. */
const sizeHint = (events: unknown[], bodyBytes: number) => bodyBytes + events.length * 160;

/** Profiles a bot_api request may carry, by default (MAX_PROFILES_PER_REQUEST): as many as events. */
export const MAX_PROFILES = 1000;

function checkProfilesCount(users: unknown, max: number): Refusal | null {
  if (!Array.isArray(users) || users.length <= max) return null;
  return {
    code: 'too_many_profiles',
    message: `"users" holds ${users.length} profiles; at most ${max} are allowed per request.`,
    details: { count: users.length, max },
  };
}

/** bot_api: `{events, users?, bot?, version?}`; `bodyBytes` sizes the row buffer. */
export function processBotApiBatch(
  body: unknown,
  ctx: BatchContext,
  bodyBytes = 0,
  maxProfiles = MAX_PROFILES,
): BatchOutcome {
  if (!isObject(body)) return { ok: false, refusal: { code: 'invalid_body' } };
  if (body.version !== undefined && body.version !== '1')
    return { ok: false, refusal: { code: 'unsupported_version' } };
  const bad =
    checkEventsArray(body.events) ??
    checkParseTime(body.events as unknown[]) ??
    checkProfilesCount(body.users, maxProfiles);
  if (bad !== null) return { ok: false, refusal: bad };
  const diag = new DiagnosticSink();
  const r = runEvents(body.events as unknown[], ctx, null, diag, sizeHint(body.events as unknown[], bodyBytes));
  const profiles = (body.users === undefined || body.users === null ? [] : parseProfiles(body.users, diag)).filter(
    (p) => !isSuppressed(ctx.suppressed, p.id),
  );
  const bot =
    body.bot === undefined || body.bot === null ? null : parseBotSnapshot(body.bot, ctx.messengerBotId ?? null, diag);
  return { ok: true, batch: finish(diag, r, profiles, bot) };
}

/** webapp: the events of `{botId, auth, events}`; the user and profile come from verified initData. */
export function processWebappBatch(events: unknown, ctx: BatchContext, user: UserSeen, bodyBytes = 0): BatchOutcome {
  const bad = checkEventsArray(events);
  if (bad !== null) return { ok: false, refusal: bad };
  const diag = new DiagnosticSink();
  // A mini-app opened through a link with startapp: the campaign, signed by the messenger, on every event.
  const r = runEvents(
    events as unknown[],
    ctx,
    user.id,
    diag,
    sizeHint(events as unknown[], bodyBytes),
    user.startParam ?? null,
  );
  return { ok: true, batch: finish(diag, r, isSuppressed(ctx.suppressed, user.id) ? [] : [user], null) };
}

/** A quarantined event checked again (replay): the batch of that one event, or why it is still rejected. */
export interface Rechecked {
  eventId: string | null;
  batch: BatchResult | null;
  diagnostics: Diagnostic[];
}

const stillInvalid = (message: string): Diagnostic[] => [
  { event_id: null, code: 'event_invalid', severity: 'error', path: 'event', message },
];

/** Runs a quarantined event (its JSON as kept) through the pipeline again, as if it arrived now on its channel. */
export function recheckQuarantined(
  event: string,
  truncated: boolean,
  ctx: BatchContext,
  webappUser: string | null,
  maxDepth: number,
): Rechecked {
  if (truncated)
    return {
      eventId: null,
      batch: null,
      diagnostics: stillInvalid(
        'the event was longer than 64 KiB when it arrived; only its beginning was kept, so it cannot be replayed',
      ),
    };
  const raw: unknown = JSON.parse(event);
  // Kept before MAX_JSON_DEPTH bounded bodies: it could not be shown or stored safely.
  if (deeperThan(raw, maxDepth - 2))
    return {
      eventId: null,
      batch: null,
      diagnostics: stillInvalid(`the event nests deeper than MAX_JSON_DEPTH (${maxDepth}) allows in a body`),
    };
  const eventId = parseUuid((raw as { eventId?: unknown } | null)?.eventId);
  const r =
    ctx.channel === 'webapp'
      ? processWebappBatch([raw], ctx, { id: webappUser ?? '0' })
      : processBotApiBatch({ events: [raw] }, ctx);
  if (!r.ok) return { eventId, batch: null, diagnostics: stillInvalid(r.refusal.message ?? r.refusal.code) };
  return { eventId, batch: r.batch, diagnostics: r.batch.diagnostics };
}
