// The rows the lake holds, as the database hands them over (CSV from COPY, read by the engine) and as the lake's
// Parquet files type them: the public columns of `events` (never `billed` or `summarized`), ids as UUID strings, each
// typed bucket a map of its type, the `$tg` section as JSON; the project and the UTC day of receipt are the
// partitions. The users snapshot likewise.
import { EVENT_COLUMNS } from '../writer/columns.js';
import { literal } from './engine.js';

/** What COPY selects from `events`, in the order the engine reads it. */
/** Times as microseconds since 1970 (exact, whatever the session's DateStyle, and for dates before year 1 too). */
export const EVENT_CSV_SELECT = `SELECT project_id, bot_id, event_id, event_name, event_type,
  (extract(epoch FROM event_date) * 1000000)::int8, (extract(epoch FROM received_at) * 1000000)::int8,
  platform_user_id, origin, channel, text, props_string, props_long, props_float, props_bool, tg,
  (received_at AT TIME ZONE 'UTC')::date AS date FROM events`;

const EVENT_CSV_COLUMNS = `{'project_id': 'VARCHAR', 'bot_id': 'VARCHAR', 'event_id': 'VARCHAR', 'event_name': 'VARCHAR',
  'event_type': 'VARCHAR', 'event_date': 'BIGINT', 'received_at': 'BIGINT', 'platform_user_id': 'BIGINT',
  'origin': 'VARCHAR', 'channel': 'VARCHAR', 'text': 'VARCHAR', 'props_string': 'VARCHAR', 'props_long': 'VARCHAR',
  'props_float': 'VARCHAR', 'props_bool': 'VARCHAR', 'tg': 'VARCHAR', 'date': 'DATE'}`;

/** The lake's columns of an event, in file order: the public columns the writer stores, but the partition's. */
export const LAKE_EVENT_COLUMNS = EVENT_COLUMNS.filter((c) => !['project_id', 'billed', 'summarized'].includes(c));

/**
 * PostgreSQL's CSV as COPY writes it: an empty unquoted field is NULL, a quoted one an empty string. A line may be as
 * long as the largest row the pipeline stores (1024 properties of 4096 characters, each doubled by quoting at worst).
 */
const csvOptions = (columns: string) =>
  `header = false, columns = ${columns}, delim = ',', quote = '"', escape = '"', nullstr = '', auto_detect = false, new_line = '\\n', max_line_size = 67108864, buffer_size = 134217728`;

/**
 * The engine's SELECT of a CSV file of EVENT_CSV_SELECT's rows, typed as the lake keeps them, the partitions first.
 * The buckets were checked on the way in (src/pipeline/event.ts: safe integers, finite numbers), so each casts.
 */
export function eventsFromCsv(file: string): string {
  return `SELECT project_id, date, bot_id, event_id, event_name, event_type,
    make_timestamp(event_date)::TIMESTAMPTZ AS event_date, make_timestamp(received_at)::TIMESTAMPTZ AS received_at,
    platform_user_id, origin, channel, text,
    TRY_CAST(props_string::JSON AS MAP(VARCHAR, VARCHAR)) AS props_string,
    TRY_CAST(props_long::JSON AS MAP(VARCHAR, BIGINT)) AS props_long,
    TRY_CAST(props_float::JSON AS MAP(VARCHAR, DOUBLE)) AS props_float,
    TRY_CAST(props_bool::JSON AS MAP(VARCHAR, BOOLEAN)) AS props_bool,
    tg::JSON AS tg
    FROM read_csv(${literal(file)}, ${csvOptions(EVENT_CSV_COLUMNS)})`;
}

/** What COPY selects from `users` for a snapshot. */
export const USER_CSV_SELECT = `SELECT project_id, messenger_user_id, username, first_name, last_name, language_code,
  is_premium, first_seen, last_seen FROM users`;

const USER_CSV_COLUMNS = `{'project_id': 'VARCHAR', 'messenger_user_id': 'BIGINT', 'username': 'VARCHAR',
  'first_name': 'VARCHAR', 'last_name': 'VARCHAR', 'language_code': 'VARCHAR', 'is_premium': 'BOOLEAN',
  'first_seen': 'TIMESTAMPTZ', 'last_seen': 'TIMESTAMPTZ'}`;

export function usersFromCsv(file: string): string {
  return `SELECT * FROM read_csv(${literal(file)}, ${csvOptions(USER_CSV_COLUMNS)})`;
}

/** Parquet as the lake writes it: zstd, row groups an engine reads in parallel. */
export const PARQUET = `FORMAT parquet, COMPRESSION zstd`;

/** The column that names a user, per dataset. */
export const USER_COLUMN = { events: 'platform_user_id', users: 'messenger_user_id' } as const;
