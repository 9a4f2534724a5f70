// A window's report summaries (src/pipeline/summary.ts), grouped as the fold's base rows: what the aggregator would
// otherwise group from the events themselves. Events of a commit are grouped by project, UTC day, type and user;
// those naming a campaign also by it, with the first and last time they were received; payments and refunds stay
// one row each, to be read again by id.
import { readSessions, type SessionMark } from '../pipeline/session-summary.js';
import { readSummary, SUMMARY_TYPES } from '../pipeline/summary.js';
import { Turns } from '../base/turns.js';
import { type FiledUsers, MAX_DAYS } from './filed-users.js';

/** The fold's base rows as parallel arrays (the unnest() parameters of the fold). */
export interface BaseRows {
  projectIds: string[];
  /** Days since 1970-01-01. */
  days: number[];
  types: string[];
  users: (string | null)[];
  campaigns: (string | null)[];
  paymentIds: (string | null)[];
  counts: number[];
  firstAt: (string | null)[];
  lastAt: (string | null)[];
}

/** A window's mini-app sessions, one row each, as parallel arrays (the unnest() parameters of the sessions' fold). */
export interface SessionRows {
  projectIds: string[];
  sessionIds: string[];
  users: string[];
  /** The earliest app_open's eventDate, and its platform. */
  openedAt: (string | null)[];
  platforms: (string | null)[];
  /** The latest eventDate of any event but app_close. */
  lastAt: (string | null)[];
  /** The latest app_close's eventDate. */
  closedAt: (string | null)[];
}

interface Session {
  projectId: string;
  id: string;
  user: number;
  opened: number;
  platform: string | null;
  last: number;
  closed: number;
}

interface Named {
  projectId: string;
  user: number;
  day: number;
  type: string;
  campaign: string;
  n: number;
  first: number;
  last: number;
}

export class WindowSummaries {
  /** Per project, per user (NaN: none), per day × 16 + type (at most 16 types: summary.test.ts): events. */
  private readonly plain = new Map<string, Map<number, Map<number, number>>>();
  private readonly named = new Map<string, Named>();
  /** Per project, users with a payment or a campaign in the window (true: their campaign may have changed): never counted alone. */
  private readonly marked = new Map<string, Map<number, boolean>>();
  /** Projects any of whose users' campaigns the window may have changed (markProject). */
  private readonly markedProjects = new Set<string>();
  /** Made by rows() for fileInto(): the users whose campaign the window leaves as it was, and their days (a few at most). */
  private readonly filing: { projectId: string; user: number; days: number[] }[] = [];
  private readonly out: BaseRows = {
    projectIds: [],
    days: [],
    types: [],
    users: [],
    campaigns: [],
    paymentIds: [],
    counts: [],
    firstAt: [],
    lastAt: [],
  };
  private readonly sessions = new Map<string, Session>();
  /** Rows made so far. */
  groups = 0;

  /** Sections left out: received at or before fromMs (see the constructor). */
  skipped = 0;

  /**
   * Only sections received after `fromMs` count: those before were read from the table by windows of time (before
   * summaries began, or by a build that folded by time).
   */
  constructor(private readonly fromMs: number) {}

  add(summary: Uint8Array): void {
    let projectId = '';
    let receivedAt = 0;
    let users: Map<number, Map<number, number>> | undefined;
    readSummary(
      summary,
      (s) => {
        if (!(s.receivedAt > this.fromMs)) {
          this.skipped++;
          return false;
        }
        projectId = s.projectId;
        receivedAt = s.receivedAt;
        users = this.plain.get(projectId);
        if (users === undefined) this.plain.set(projectId, (users = new Map()));
        return true;
      },
      (user, day, typeIndex, campaign, paymentId) => {
        if (paymentId !== null) {
          this.mark(projectId, user, campaign !== null);
          // Its time lets the fold find the row by id in the one partition that holds it.
          const at = new Date(receivedAt).toISOString();
          this.groups++;
          this.push(projectId, day, SUMMARY_TYPES[typeIndex]!, user, campaign, paymentId, 1, at, at);
        } else if (campaign !== null) {
          this.mark(projectId, user, true);
          const key = `${projectId} ${user} ${day} ${typeIndex} ${campaign}`;
          const g = this.named.get(key);
          if (g === undefined) {
            this.groups++;
            this.named.set(key, {
              projectId,
              user,
              day,
              type: SUMMARY_TYPES[typeIndex]!,
              campaign,
              n: 1,
              first: receivedAt,
              last: receivedAt,
            });
          } else {
            g.n++;
            if (receivedAt < g.first) g.first = receivedAt;
            if (receivedAt > g.last) g.last = receivedAt;
          }
        } else {
          let days = users!.get(user);
          if (days === undefined) users!.set(user, (days = new Map()));
          const k = day * 16 + typeIndex;
          const n = days.get(k);
          if (n === undefined) this.groups++;
          days.set(k, (n ?? 0) + 1);
        }
      },
    );
  }

  /** A commit's session records (report_summaries.sessions), those received after fromMs. */
  addSessions(bytes: Uint8Array): void {
    let projectId = '';
    readSessions(
      bytes,
      (s) => {
        projectId = s.projectId;
        return s.receivedAt > this.fromMs;
      },
      (user, m) => this.addSession(projectId, user, m),
    );
  }

  private addSession(projectId: string, user: number, m: SessionMark): void {
    const key = `${projectId} ${user} ${m.id}`;
    let s = this.sessions.get(key);
    if (s === undefined) {
      this.groups++;
      this.sessions.set(
        key,
        (s = { projectId, id: m.id, user, opened: Infinity, platform: null, last: -Infinity, closed: -Infinity }),
      );
    }
    if (m.kind === 2) s.closed = Math.max(s.closed, m.at);
    else s.last = Math.max(s.last, m.at);
    // Two opens at one time: the platform first in order (nulls last), as the SQL of the table path picks it.
    if (
      m.kind === 1 &&
      (m.at < s.opened ||
        (m.at === s.opened && m.platform !== null && (s.platform === null || m.platform < s.platform)))
    ) {
      s.opened = m.at;
      s.platform = m.platform;
    }
  }

  /** The window's sessions, once. */
  sessionRows(): SessionRows {
    const out: SessionRows = {
      projectIds: [],
      sessionIds: [],
      users: [],
      openedAt: [],
      platforms: [],
      lastAt: [],
      closedAt: [],
    };
    const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : null);
    for (const s of this.sessions.values()) {
      out.projectIds.push(s.projectId);
      out.sessionIds.push(s.id);
      out.users.push(String(s.user));
      out.openedAt.push(iso(s.opened));
      out.platforms.push(s.platform);
      out.lastAt.push(iso(s.last));
      out.closedAt.push(iso(s.closed));
    }
    this.sessions.clear();
    return out;
  }

  /**
   * A user named in the window with a payment, or with a campaign, here or outside the summaries: their events never
   * count alone, and once folded `filed` forgets those whose campaign may have changed.
   */
  mark(projectId: string, user: number, mayChangeCampaign: boolean): void {
    if (Number.isNaN(user)) return;
    let users = this.marked.get(projectId);
    if (users === undefined) this.marked.set(projectId, (users = new Map()));
    if (mayChangeCampaign || !users.has(user)) users.set(user, mayChangeCampaign);
  }

  /** As mark(…, true) for every user of the project: too many of them are named outside the summaries to list. */
  markProject(projectId: string): void {
    this.markedProjects.add(projectId);
  }

  /** Whether mark(…, true) or markProject named the user. */
  marksUser(projectId: string, user: number): boolean {
    return this.markedProjects.has(projectId) || this.marked.get(projectId)?.get(user) === true;
  }

  marksProject(projectId: string): boolean {
    return this.markedProjects.has(projectId);
  }

  /**
   * The grouped rows, once. The events of a user `filed` holds on each of their days, with no payment or campaign,
   * count alone: summed into rows of no user, as they change nothing else (src/reports/filed-users.ts).
   */
  async rows(filed: FiledUsers | null = null): Promise<BaseRows> {
    const turn = new Turns();
    for (const [projectId, users] of this.plain) {
      const marked = this.marked.get(projectId);
      const allMarked = this.markedProjects.has(projectId);
      let alone: Map<number, number> | undefined;
      for (const [user, counts] of users) {
        const pause = turn.take();
        if (pause) await pause;
        const mark = allMarked || marked?.get(user);
        if (!Number.isNaN(user) && mark !== true) {
          const days = daysOf(counts);
          this.filing.push({ projectId, user, days });
          // Never alone with a payment (mark false): the fold reads it again by id.
          if (mark === undefined && filed?.holds(projectId, user, days)) {
            alone ??= new Map();
            for (const [k, n] of counts) alone.set(k, (alone.get(k) ?? 0) + n);
            continue;
          }
        }
        for (const [k, n] of counts) this.push(projectId, dayOf(k), typeOf(k), user, null, null, n, null, null);
      }
      for (const [k, n] of alone ?? [])
        this.push(projectId, dayOf(k), typeOf(k), Number.NaN, null, null, n, null, null);
    }
    for (const g of this.named.values())
      this.push(
        g.projectId,
        g.day,
        g.type,
        g.user,
        g.campaign,
        null,
        g.n,
        new Date(g.first).toISOString(),
        new Date(g.last).toISOString(),
      );
    // What fileInto needs is in `filing` and `marked`.
    this.plain.clear();
    this.named.clear();
    return this.out;
  }

  /**
   * Once the window's fold has committed: the users it filed on their days, and those whose campaign it may have set
   * (marked, or of a project marked whole).
   */
  async fileInto(filed: FiledUsers): Promise<void> {
    filed.forgetProjects(this.markedProjects);
    const turn = new Turns();
    for (const { projectId, user, days } of this.filing) {
      const pause = turn.take();
      if (pause) await pause;
      filed.add(projectId, user, days);
    }
    for (const [projectId, users] of this.marked)
      for (const [user, mayChangeCampaign] of users) {
        const pause = turn.take();
        if (pause) await pause;
        if (mayChangeCampaign) filed.forget(projectId, user);
      }
  }

  private push(
    projectId: string,
    day: number,
    type: string,
    user: number,
    campaign: string | null,
    paymentId: string | null,
    n: number,
    firstAt: string | null,
    lastAt: string | null,
  ): void {
    const o = this.out;
    o.projectIds.push(projectId);
    o.days.push(day);
    o.types.push(type);
    o.users.push(Number.isNaN(user) ? null : String(user));
    o.campaigns.push(campaign);
    o.paymentIds.push(paymentId);
    o.counts.push(n);
    o.firstAt.push(firstAt);
    o.lastAt.push(lastAt);
  }
}

/** A user's counts are keyed day × 16 + type index. */
const dayOf = (k: number) => Math.floor(k / 16);
const typeOf = (k: number) => SUMMARY_TYPES[k - dayOf(k) * 16]!;

/**
 * The days of a user's counts, up to one more than FiledUsers remembers: that many already tells it cannot hold
 * them all, and a user's days are the client's to choose (any date of 10,000 years), so no more are compared.
 */
function daysOf(counts: Map<number, number>): number[] {
  const days: number[] = [];
  for (const k of counts.keys()) {
    const day = dayOf(k);
    if (!days.includes(day) && days.push(day) > MAX_DAYS) break;
  }
  return days;
}
