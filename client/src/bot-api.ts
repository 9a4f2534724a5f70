// The bot_api client: the queue of IngestClient, plus user profiles and a bot snapshot that ride along with the next
// batch. Kept apart so a browser bundle of the webapp endpoint does not carry it.
import { DEFAULT_MAX_QUEUE, IngestClient } from './client.js';
import { deliver, merge, type Outcome, type Post } from './deliver.js';
import { IngestError } from './errors.js';
import type {
  BotApiClientOptions,
  BotApiEventInput,
  BotSnapshot,
  ClientOptions,
  Stamped,
  UserProfile,
  WebAppClientOptions,
  WebAppEventInput,
} from './types.js';

/** Profiles sent with one request; the rest wait for the next. */
const MAX_USERS_PER_REQUEST = 1000;

export class BotApiClient extends IngestClient<BotApiEventInput> {
  readonly #maxUsers: number;
  #users = new Map<string, UserProfile>();
  #bot: BotSnapshot | null = null;

  constructor(opts: BotApiClientOptions) {
    super(opts);
    this.#maxUsers = Math.max(1, opts.maxQueueEvents ?? DEFAULT_MAX_QUEUE);
  }

  /** Profiles to send with the next batch (later calls for the same user merge). */
  setProfile(...users: UserProfile[]): void {
    for (const u of users) {
      const id = String(u.messengerUserId);
      const merged = { ...this.#users.get(id), ...u };
      this.#users.delete(id);
      this.#users.set(id, merged);
      // Bounded like the queue: while nothing can be sent, the profiles of the longest-unseen users go first.
      if (this.#users.size > this.#maxUsers) this.#users.delete(this.#users.keys().next().value!);
    }
  }

  /** A bot snapshot to send with the next batch. */
  setBot(bot: BotSnapshot): void {
    this.#bot = { ...this.#bot, ...bot };
  }

  /** Profiles and the bot snapshot ride along with a batch; if no request of it got through they wait for the next. */
  protected override async deliverBatch(events: Stamped<BotApiEventInput>[]): Promise<Outcome<BotApiEventInput>> {
    const users: UserProfile[] = [];
    for (const u of this.#users.values()) {
      if (users.length === MAX_USERS_PER_REQUEST) break;
      users.push(u);
    }
    for (const u of users) this.#users.delete(String(u.messengerUserId));
    const bot = this.#bot;
    this.#bot = null;
    const extra = { ...(users.length > 0 ? { users } : {}), ...(bot !== null ? { bot } : {}) };
    let delivered = false;
    const outcome = await deliverBotApi(events, async (evs) => {
      const r = await this.post(evs, extra);
      delivered ||= r.ok;
      return r;
    });
    if (!delivered) {
      // Newer values set meanwhile win.
      for (const u of users) {
        const id = String(u.messengerUserId);
        this.#users.set(id, { ...u, ...this.#users.get(id) });
      }
      if (bot !== null) this.#bot = { ...bot, ...(this.#bot as BotSnapshot | null) };
    }
    return outcome;
  }
}

/**
 * deliver() on bot_api, which refuses a whole request for one malformed event and names it: that one is reported,
 * the others are sent again.
 */
export async function deliverBotApi<E>(events: Stamped<E>[], post: Post<E>): Promise<Outcome<E>> {
  const out = await deliver(events, post);
  const failure = out.failed[0];
  // Only the first request can be refused so: bot_api's parse-time checks look at each event alone, and the halves
  // resent to name rejections were all parsed once.
  const bad = failure?.events === events ? invalidIndex(failure.error, events.length) : null;
  if (bad === null) return out;
  out.failed = [{ events: [events[bad]!], error: failure!.error }];
  const rest = events.filter((_, i) => i !== bad);
  return rest.length === 0 ? out : merge(out, await deliverBotApi(rest, post));
}

function invalidIndex(error: Error, n: number): number | null {
  if (!(error instanceof IngestError) || error.status !== 400 || error.code !== 'event_invalid') return null;
  const index = (error.details as { index?: unknown } | undefined)?.index;
  return typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < n ? index : null;
}

/** A client for the endpoint the options name: `apiKey` for bot_api, `botId` and `initData` for webapp. */
export function createClient(opts: BotApiClientOptions): BotApiClient;
export function createClient(opts: WebAppClientOptions): IngestClient<WebAppEventInput>;
export function createClient(opts: ClientOptions): BotApiClient | IngestClient<WebAppEventInput> {
  return 'apiKey' in opts ? new BotApiClient(opts) : new IngestClient<WebAppEventInput>(opts);
}
