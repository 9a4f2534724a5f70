// Types shared by the stages of the pipeline: what validation produces, authentication resolves
// and the writer stores.
import type { Endpoint } from './endpoints.js';

/** The endpoint an event arrived on, as stored in `events.channel`. */
export type Channel = Endpoint;

/** A profile to upsert; fields left undefined are not touched, so a bare sighting keeps a known name. */
export interface UserSeen {
  id: string;
  username?: string | null;
  firstName?: string | null;
  lastName?: string | null;
  languageCode?: string | null;
  isPremium?: boolean | null;
  /** webapp: the session's start_param (a mini-app link's startapp), from the signed initData; not a profile field. */
  startParam?: string | null;
}

/** The bot snapshot of a bot_api request: descriptive fields only (the messenger id is set by the admin API). */
export interface BotSnapshot {
  name: string | null;
  description: string | null;
  starsAmount: number | null;
}

/**
 * An event carrying a messenger action, so that one action reported over several connections is billed once, by the
 * rule in docs/api.md (Billing).
 */
export interface ActionRef {
  key: string;
  eventId: string;
}
