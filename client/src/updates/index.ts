// `@tg-ingest/client/updates`: Bot API updates as canonical events, for the framework packages and for bots that
// run without one.
export { UPDATE_NAMESPACE, updateEventId, updateNamespace, uuidv5 } from './ids.js';
export {
  type MapOptions,
  type MappedEvent,
  type MessengerUser,
  mapUpdate,
  UPDATE_TYPES,
  type Update,
} from './mapping.js';
export {
  type BotInfo,
  BotTracker,
  type BotTrackerOptions,
  type Track,
  type TrackerStats,
  type TrackOptions,
  type TrackProps,
  type UpdateMiddleware,
  updateMiddleware,
} from './tracker.js';
