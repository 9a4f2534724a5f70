// Runs erasure requests in the background, oldest first, one step per transaction: in each events partition, a slice
// of the users (ERASURE_USERS_PER_STEP) at a time, the partition's new block ranges summarized and the slice deleted
// through its bloom summaries of users (migration 15: a BRIN index, which reads only the ranges that may hold them and
// costs an insert nothing); then the users table, the quarantine in slices, and what other features keep of users
// (ErasurePart: the reports' tables). Each step moves the erasure's `step` in the transaction that deletes, so a step
// retried after a crash or on another instance deletes nothing twice and skips nothing. An advisory lock taken per
// step keeps one instance at work at a time, and the eraser rests REST_PER_WORK times as long as each step took: a
// bloom summary is walked once per user asked, which is CPU the ingestion beside it would otherwise lose.
import type { Sql, Tx } from '../db/connect.js';
import { type ErasurePart, type ErasureStep, STEP_LOCK_TIMEOUT } from '../db/erasure.js';
import type { Logger } from '../base/log.js';
import { USER_IN_QUARANTINE } from './store.js';

const LOCK_KEY = 7_240_311_913;
/** Quarantined events examined per step: each is at most 64 KiB of JSON. */
const QUARANTINE_SLICE = 1000;
/** Time resting after a step, per time the step took: an eraser at work a quarter of the time. */
const REST_PER_WORK = 3;
/** The longest a step waits to summarize new ranges: under PostgreSQL's deadlock_timeout (1 s). */
const SUMMARIZE_LOCK_TIMEOUT = '200ms';
/** Consecutive failed attempts at one step before the erasure is marked failed; they back off 2, 4, … 32 s. */
const MAX_ATTEMPTS = 6;

type Own =
  | { phase?: undefined }
  // `summarized` is for older builds, which summarized a partition in a step of their own while it read false (and then
  // started the partition from 0): false only where a partition starts.
  | { phase: 'events'; part: string; from: number; summarized: boolean }
  | { phase: 'users' }
  | { phase: 'quarantine'; after: number };
const OWN_PHASES = new Set(['events', 'users', 'quarantine']);
/** The eraser's own steps, then the parts' (ErasurePart). */
type Step = Own | ErasureStep;

interface Job {
  erasure_id: string;
  project_id: string;
  status: 'pending' | 'running';
  user_ids: string[];
  suppress: boolean;
  step: Step;
}

export interface EraserOptions {
  /** Users deleted from an events partition per step: each costs a walk of the partition's bloom summaries. */
  usersPerStep: number;
  /** How often an idle eraser looks for work. */
  pollMs: number;
  /**
   * How long a suppressing erasure waits before it reads the events: until every instance refuses the users
   * (2 × AUTH_CACHE_TTL_MS) and every request admitted before then is committed or answered (WRITE_TIMEOUT_MS), so no
   * event of theirs lands behind the pass.
   */
  settleMs: number;
}

export class Eraser {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Ends the rest under way (stop() does not wait it out). */
  private wakeFromRest: (() => void) | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly opts: EraserOptions,
    private readonly log: Logger,
    /** What other features keep of users, erased after the events, the users table and the quarantine. */
    private readonly parts: readonly ErasurePart[] = [],
  ) {}

  start(): void {
    // A part's phase named as one of the eraser's own would be taken for it.
    for (const part of this.parts)
      for (const phase of part.phases)
        if (OWN_PHASES.has(phase)) throw new Error(`an erasure part names the eraser's own phase ${phase}`);
    this.schedule(0);
  }

  /** A request was made here: start on it now rather than at the next poll. */
  wake(): void {
    if (this.running === null && !this.stopped) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeFromRest?.();
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.running !== null) return;
      this.running = this.drain()
        .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'erasure step failed'))
        .finally(() => {
          this.running = null;
          this.schedule(this.opts.pollMs);
        });
    }, ms);
    this.timer.unref();
  }

  /** Steps until there is no work (or another instance holds the lock), resting between them. */
  async drain(): Promise<void> {
    for (;;) {
      const started = performance.now();
      if (this.stopped || !(await this.step()) || this.stopped) return;
      const rest = (performance.now() - started) * REST_PER_WORK;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, rest);
        timer.unref();
        this.wakeFromRest = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeFromRest = null;
    }
  }

  /** One step of the oldest open erasure; false when there is none to do here. */
  async step(): Promise<boolean> {
    let job: Job | null = null;
    try {
      return (await this.sql.begin(async (tx) => {
        const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok`;
        if (!lock?.ok) return false;
        const [j] = await tx<Job[]>`
          SELECT erasure_id, project_id, status, user_ids::text[] AS user_ids, suppress, step FROM erasures
          WHERE status IN ('pending', 'running') AND (retry_at IS NULL OR retry_at <= now())
            AND (NOT suppress OR created_at <= now() - ${this.opts.settleMs} * interval '1 millisecond')
          ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`;
        if (j === undefined) return false;
        job = j;
        if (j.status === 'pending')
          await tx`UPDATE erasures SET status = 'running', started_at = now() WHERE erasure_id = ${j.erasure_id}`;
        // Bounded work: see STEP_LOCK_TIMEOUT.
        await tx.unsafe(`SET LOCAL lock_timeout = '${STEP_LOCK_TIMEOUT}'`);
        await this.advance(tx, j);
        return true;
      })) as boolean;
    } catch (err) {
      const failed = job as Job | null;
      if (failed === null) throw err;
      // Counted in the row, so every instance and a restart see the same attempts; a step that passes resets them.
      const message = (err as Error).message.slice(0, 500);
      const [r] = await this.sql<{ attempts: number }[]>`
        UPDATE erasures SET attempts = attempts + 1, error = ${message},
          retry_at = now() + power(2, least(attempts + 1, 5)) * interval '1 second',
          status = CASE WHEN attempts + 1 >= ${MAX_ATTEMPTS} THEN 'failed' ELSE status END,
          finished_at = CASE WHEN attempts + 1 >= ${MAX_ATTEMPTS} THEN now() END,
          user_ids = CASE WHEN attempts + 1 >= ${MAX_ATTEMPTS}
            THEN (SELECT array_agg(user_id ORDER BY user_id) FROM suppressions WHERE erasure_id = ${failed.erasure_id})
            ELSE user_ids END
        WHERE erasure_id = ${failed.erasure_id}
        RETURNING attempts`.catch(() => []);
      const attempts = r?.attempts ?? 0;
      this.log[attempts >= MAX_ATTEMPTS ? 'error' : 'warn'](
        { err: message, erasureId: failed.erasure_id, attempts },
        attempts >= MAX_ATTEMPTS ? 'erasure failed' : 'erasure step failed; retried later',
      );
      return false;
    }
  }

  private async advance(tx: Tx, j: Job): Promise<void> {
    const ids = j.user_ids;
    const s = j.step as Own;
    const move = (next: Step, counts: { events?: number; users?: number; quarantine?: number } = {}) => tx`
      UPDATE erasures SET step = ${tx.json(next as never)}, attempts = 0, retry_at = NULL, error = NULL,
        deleted_events = deleted_events + ${counts.events ?? 0},
        deleted_users = deleted_users + ${counts.users ?? 0},
        deleted_quarantine = deleted_quarantine + ${counts.quarantine ?? 0}
      WHERE erasure_id = ${j.erasure_id}`;
    if (s.phase === undefined || s.phase === 'events') {
      const parts = await partitions(tx);
      const at = s.phase === 'events' ? parts.findIndex((p) => p.name >= s.part) : 0;
      const part = at === -1 ? undefined : parts[at];
      if (part === undefined) return void (await move({ phase: 'users' }));
      const from = s.phase === 'events' && s.part === part.name ? s.from : 0;
      if (from >= ids.length) {
        const next = parts[at + 1];
        return void (await move(
          next === undefined ? { phase: 'users' } : { phase: 'events', part: next.name, from: 0, summarized: false },
        ));
      }
      // Ranges not summarized yet (the partition's newest, and under ingestion whatever it took in since the last step)
      // would be read whole by the delete: summarized first, each step, so a new page is read once rather than once per
      // slice. Never waiting past SUMMARIZE_LOCK_TIMEOUT, below deadlock_timeout, after which an autovacuum holding the
      // lock would be cancelled: the delete finds every row either way.
      if (part.index !== null) {
        await tx
          .savepoint(async (sp) => {
            await sp.unsafe(`SET LOCAL lock_timeout = '${SUMMARIZE_LOCK_TIMEOUT}'`);
            await sp`SELECT brin_summarize_new_values(${part.index}::regclass)`;
          })
          .catch((err: { code?: string }) => {
            if (err.code !== '55P03') throw err;
          });
        await tx.unsafe(`SET LOCAL lock_timeout = '${STEP_LOCK_TIMEOUT}'`);
      }
      const slice = ids.slice(from, from + this.opts.usersPerStep);
      // Through the bloom summaries (a bitmap scan; never the whole partition, nor a parallel scan beside ingestion).
      await tx`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true),
                      set_config('max_parallel_workers_per_gather', '0', true)`;
      // Names come from pg_inherits and match events_YYYY_MM (partitions()).
      const gone = await tx.unsafe(
        `DELETE FROM ${part.name} WHERE platform_user_id = ANY($2::bigint[]) AND project_id = $1`,
        [j.project_id, slice],
      );
      return void (await move(
        { phase: 'events', part: part.name, from: from + slice.length, summarized: true },
        { events: gone.count },
      ));
    }
    if (s.phase === 'users') {
      const gone =
        await tx`DELETE FROM users WHERE project_id = ${j.project_id} AND messenger_user_id = ANY(${ids}::bigint[])`;
      // A private chat's id is its user's: the billing ledger's keys of their messages name them (message:<chat>:<id>).
      for (const table of ['billing_actions', 'billing_free_reports'])
        await tx.unsafe(
          `DELETE FROM ${table} b USING unnest($2::text[]) AS u(id)
           WHERE b.project_id = $1 AND b.action_key >= 'message:' || u.id || ':' AND b.action_key < 'message:' || u.id || ';'`,
          [j.project_id, ids],
        );
      return void (await move({ phase: 'quarantine', after: 0 }, { users: gone.count }));
    }
    if (s.phase === 'quarantine') {
      // The verified user of a webapp event, or the platformUserId a bot_api event names in its stored body.
      const [r] = await tx<{ last: string | null; gone: number }[]>`
        WITH slice AS (
          SELECT id, user_id, event, truncated FROM quarantine WHERE project_id = ${j.project_id} AND id > ${s.after}
          ORDER BY id LIMIT ${QUARANTINE_SLICE}
        ), gone AS (
          DELETE FROM quarantine q USING slice s
          WHERE q.id = s.id AND (s.user_id = ANY(${ids}::bigint[])
             OR ${tx.unsafe(USER_IN_QUARANTINE.replaceAll('event', 's.event').replaceAll('truncated', 's.truncated'))} = ANY(${ids}::text[]))
          RETURNING 1
        )
        SELECT (SELECT max(id) FROM slice)::text AS last, (SELECT count(*) FROM gone)::int AS gone`;
      const first = this.parts[0];
      if (r!.last === null && first === undefined) {
        await move(s, { quarantine: r!.gone });
        return void (await this.finish(tx, j));
      }
      const next: Step = r!.last === null ? first!.start : { phase: 'quarantine', after: Number(r!.last) };
      return void (await move(next, { quarantine: r!.gone }));
    }
    // The parts of other features, in their order; a step that belongs to none (stored by a part since removed) ends.
    const part = j.step as ErasureStep;
    const at = this.parts.findIndex((p) => p.phases.includes(part.phase));
    if (at !== -1) {
      const job = { erasureId: j.erasure_id, projectId: j.project_id, userIds: ids };
      const next = await this.parts[at]!.step(tx, job, part);
      if (next !== null) return void (await move(next));
    }
    const following = this.parts[at + 1];
    if (at !== -1 && following !== undefined) return void (await move(following.start));
    await this.finish(tx, j);
  }

  /** The erasure done: the ids stay only while they are suppressed. */
  private async finish(tx: Tx, j: Job): Promise<void> {
    await tx`
      UPDATE erasures SET status = 'done', finished_at = now(), step = '{}', attempts = 0, retry_at = NULL, error = NULL,
        user_ids = CASE WHEN suppress
          THEN (SELECT array_agg(user_id ORDER BY user_id) FROM suppressions WHERE erasure_id = ${j.erasure_id})
        END
      WHERE erasure_id = ${j.erasure_id}`;
    this.log.info({ erasureId: j.erasure_id }, 'erasure done');
  }
}

/** The events partitions, and each one's bloom summaries of users (null where the partition has none). */
async function partitions(tx: Tx): Promise<{ name: string; index: string | null }[]> {
  return tx<{ name: string; index: string | null }[]>`
    SELECT c.relname AS name,
      (SELECT x.indexrelid::regclass::text FROM pg_index x JOIN pg_inherits h ON h.inhrelid = x.indexrelid
       WHERE x.indrelid = c.oid AND h.inhparent = 'events_user_bloom'::regclass) AS index
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{4}_[0-9]{2}$'
    ORDER BY 1`;
}
