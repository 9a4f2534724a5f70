// When each token was last used (`lastUsedAt` in the admin API). A request only notes the time in memory; the
// notes are written every TOKEN_USE_FLUSH_MS (a minute), one statement for every token used since, and at
// shutdown. A crash loses at most that minute of notes, never a request's time.
import type { Sql } from '../db/connect.js';
import type { Logger } from '../base/log.js';

export const TOKEN_USE_FLUSH_MS = 60_000;

export class TokenUse {
  private used = new Map<string, number>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    everyMs = TOKEN_USE_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush(), everyMs);
    this.timer.unref();
  }

  /** At most one entry per live token: bounded by the tokens that exist. */
  note(tokenId: string): void {
    this.used.set(tokenId, Date.now());
  }

  async flush(): Promise<void> {
    if (this.used.size === 0) return;
    const batch = this.used;
    this.used = new Map();
    const ids = [...batch.keys()];
    const ats = ids.map((id) => new Date(batch.get(id)!).toISOString());
    try {
      await this.sql`
        UPDATE api_tokens t SET last_used_at = greatest(t.last_used_at, v.at)
        FROM unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS v(id, at)
        WHERE t.token_id = v.id`;
    } catch (err) {
      // Kept for the next flush, unless newer notes replaced them meanwhile.
      for (const [id, at] of batch) if (!this.used.has(id)) this.used.set(id, at);
      this.log.warn({ err: (err as Error).message, tokens: ids.length }, 'writing when tokens were last used failed');
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
