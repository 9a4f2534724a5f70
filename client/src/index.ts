// The embeddable client: batches, retries per the service's retry guidance, reports every event's
// fate, and in browsers keeps the webapp endpoint's unsettled events across sessions.
export { BotApiClient, createClient } from './bot-api.js';
export { IngestClient, MAX_BATCH_EVENTS, uuidv7 } from './client.js';
export { IngestError, type IngestErrorInit } from './errors.js';
export { outboxKey } from './outbox.js';
export type { Endpoint } from './retry.js';
export type {
  BotApiClientOptions,
  BotApiEventInput,
  BotSnapshot,
  ClientOptions,
  Diagnostic,
  EventType,
  FailedEvents,
  FlushReport,
  IngestResponse,
  OutboxStorage,
  RejectedEvent,
  ServerClientOptions,
  ServerEventInput,
  Stamped,
  UserProfile,
  WebAppClientOptions,
  WebAppEventInput,
} from './types.js';
