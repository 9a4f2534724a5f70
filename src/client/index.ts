// The embeddable client: batches, retries per the README's retry guidance, reports every event's fate.
export { createClient, IngestClient, MAX_BATCH_EVENTS } from './client.js';
export { IngestError, type IngestErrorInit } from './errors.js';
export type {
  BotSnapshot, ClientOptions, Diagnostic, EventType, FailedEvents, FlushReport, IngestResponse, RejectedEvent,
  ServerClientOptions, ServerEventInput, Stamped, UserProfile, WebAppClientOptions, WebAppEventInput,
} from './types.js';
