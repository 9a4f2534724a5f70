// What the ingestion stage hands its rows to: a sink that commits them and says what was stored.
// The group-commit writer is the real one; tests of the stages before it can use anything else.
import type { ActionRef, BotSnapshot, UserSeen } from '../base/model.js';

/** Where a request's rows come from and go. */
export interface WriteTarget {
  projectId: string;
  botId: string;
  /** The billing connection: channel plus credential ("token:<id>", "webapp:<botId>"). */
  connection: string;
  receivedAt: string;
  /** True when the batch's `profiles` come from verified initData and replace stored ones. */
  authoritativeProfiles: boolean;
}

/** What a request's batch holds for the writer; the pipeline's BatchResult is one, passed as it is. */
export interface StoredBatch {
  /** COPY text of every accepted event (billed = t). */
  rows: Uint8Array;
  rowCount: number;
  /**
   * What the rows add to the reports (src/pipeline/summary.ts), stored with the commit for the report aggregator; rows
   * it leaves out say summarized = false.
   */
  summary: Uint8Array;
  /** The summarized rows' mini-app session records (src/pipeline/session-summary.ts), stored beside the summary. */
  sessions: Uint8Array;
  actions: ActionRef[];
  /** Users seen in accepted events and sent without a profile: a bare row (first/last seen) each. */
  userIds: string[];
  /** Profiles to upsert (users[] on bot_api, the initData user on webapp). */
  profiles: UserSeen[];
  bot: BotSnapshot | null;
  /**
   * Accepted events dated before the day after the month of receipt began: only those can have been
   * received in an earlier month, whose partition the writer checks for them.
   */
  recheck: string[];
  /**
   * COPY text of the events rejected after authentication, kept in quarantine with their reasons, committed with the
   * rows.
   */
  quarantine: Uint8Array;
  quarantineCount: number;
}

export interface WriteRequest {
  target: WriteTarget;
  batch: StoredBatch;
}

export interface WriteOutcome {
  /** Rows this request added to `events`. */
  stored: number;
  billed: number;
  /** Stored with billed = false: another connection reported the same action first. */
  storedNotBilled: number;
  /** Accepted events already stored by an earlier request: not stored or billed again. */
  redelivered: number;
}

/**
 * unavailable: the database could not confirm the commit (nothing is known to be stored; a retry is exact);
 * refused: the database refused this request's rows, committed alone (resending them cannot succeed);
 * overloaded: refused before anything was sent.
 */
export type WriteFailure = 'unavailable' | 'refused' | 'overloaded';

export class WriteError extends Error {
  constructor(
    readonly kind: WriteFailure,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'WriteError';
  }

  /** The database's SQLSTATE, when it answered with an error. */
  get sqlstate(): string | undefined {
    const code = (this.cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  }
}

export interface EventSink {
  /** Settles once the request's rows are committed (with what was stored), or with a WriteError. */
  submit(req: WriteRequest): Promise<WriteOutcome>;
  /** Resolves once everything submitted so far has settled. */
  drain(): Promise<void>;
  /** Drains, then releases the sink's connections. */
  close(): Promise<void>;
  /** Requests queued or committing. */
  readonly pending: number;
}
