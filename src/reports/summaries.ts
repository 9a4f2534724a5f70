// A window's report summaries (src/pipeline/summary.ts), grouped as the fold's base rows: what the aggregator would
// otherwise group from the events themselves. Events of a commit are grouped by project, UTC day, type and user;
// those naming a campaign also by it, with the first and last time they were received; payments and refunds stay
// one row each, to be read again by id.
import { readSummary, SUMMARY_TYPES } from '../pipeline/summary.js';

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
  /** Records taken so far, and the rows they make. */
  records = 0;
  groups = 0;

  /** Only sections received in (fromMs, toMs] count: a commit's requests can straddle two windows. */
  constructor(
    private readonly fromMs: number,
    private readonly toMs: number,
  ) {}

  add(summary: Uint8Array): void {
    let projectId = '';
    let receivedAt = 0;
    let users: Map<number, Map<number, number>> | undefined;
    readSummary(
      summary,
      (s) => {
        if (!(s.receivedAt > this.fromMs && s.receivedAt <= this.toMs)) return false;
        projectId = s.projectId;
        receivedAt = s.receivedAt;
        users = this.plain.get(projectId);
        if (users === undefined) this.plain.set(projectId, (users = new Map()));
        return true;
      },
      (user, day, typeIndex, campaign, paymentId) => {
        this.records++;
        if (paymentId !== null) {
          const at = campaign === null ? null : new Date(receivedAt).toISOString();
          this.groups++;
          this.push(projectId, day, SUMMARY_TYPES[typeIndex]!, user, campaign, paymentId, 1, at, at);
        } else if (campaign !== null) {
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

  /** The grouped rows; the summaries added so far, once. */
  rows(): BaseRows {
    for (const [projectId, users] of this.plain)
      for (const [user, days] of users)
        for (const [k, n] of days) {
          const day = Math.floor(k / 16);
          this.push(projectId, day, SUMMARY_TYPES[k - day * 16]!, user, null, null, n, null, null);
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
    this.plain.clear();
    this.named.clear();
    return this.out;
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
