// What an erasure asks of a feature that keeps users' data in tables of its own (the reports' users, active days and
// payments): the eraser runs the feature's part after its own, one bounded step per transaction, and keeps where it
// is in `erasures.step`, so a part's phase names are stored and must stay as they are.
import type { Tx } from './connect.js';

/** A lock another session holds longer than this (DDL on a partition) fails an erasure's step, which is retried. */
export const STEP_LOCK_TIMEOUT = '5s';

export interface ErasureJob {
  erasureId: string;
  projectId: string;
  /** The users, as decimal strings. */
  userIds: string[];
}

/** Where a part is: its phase, and what else it needs to go on (JSON). */
export type ErasureStep = { phase: string } & Record<string, unknown>;

export interface ErasurePart {
  /** Where the part begins. */
  readonly start: ErasureStep;
  /** Every phase the part moves through. */
  readonly phases: readonly string[];
  /** One step inside the eraser's transaction: where the part goes on from, or null once it is done. */
  step(tx: Tx, job: ErasureJob, at: ErasureStep): Promise<ErasureStep | null>;
}
