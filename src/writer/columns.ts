// The columns of the writer's COPYs, in the order the pipeline encodes rows in (copy-text.ts).

/**
 * Column order of every COPY into `events`. Rows are written billed; the writer unbills the few that another connection
 * reported first.
 */
export const EVENT_COLUMNS = [
  'project_id',
  'bot_id',
  'event_id',
  'event_name',
  'event_type',
  'event_date',
  'received_at',
  'platform_user_id',
  'origin',
  'channel',
  'text',
  'props_string',
  'props_long',
  'props_float',
  'props_bool',
  'tg',
  'billed',
  // Whether the commit's report summary holds the row (src/pipeline/summary.ts): the aggregator reads the others.
  'summarized',
] as const;

/** Column order of every COPY into `quarantine`. */
export const QUARANTINE_COLUMNS = [
  'project_id',
  'bot_id',
  'channel',
  'connection_id',
  'user_id',
  'received_at',
  'event_id',
  'codes',
  'diagnostics',
  'event',
  'truncated',
] as const;
