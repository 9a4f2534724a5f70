// The statements of the sessions report (migration 16): a window's mini-app sessions folded into report_sessions, and
// what each change of a session moves in the per-day tables; an erasure's removal of users' sessions alike. A session
// is a user's events of the webapp endpoint with one propsString.session_id (a UUID); it counts on the UTC day of its
// earliest app_open, from the time of it to its latest app_close, or to its latest other event when no close came
// within SESSION_CLOSE_WITHIN of that event (at or before it plus that), counted up to SESSION_MAX_S. Without an
// app_open it is not a session (yet). Its platform is one the messenger names (PLATFORMS), else `other`.

import { UUID_PATTERN } from '../pipeline/ids.js';
import { PLATFORMS } from '../pipeline/session-summary.js';

/** A close that comes later than this after a session's last other event is not its end (the app lay hidden). */
export const SESSION_CLOSE_WITHIN = "interval '30 minutes'";
/** A session's length is counted up to a day: the per-day table of lengths has at most this many + 1 rows a day. */
export const SESSION_MAX_S = 86_400;

const PLATFORM_SQL = PLATFORMS.map((p) => `'${p}'`).join(', ');

/** A session's length in whole seconds, from its columns (or CTE columns) of opening, last event and close. */
const length = (opened: string, last: string, closed: string) => `
  least(${SESSION_MAX_S}, greatest(0, floor(extract(epoch FROM
    CASE WHEN ${closed} IS NOT NULL AND (${last} IS NULL OR ${closed} <= ${last} + ${SESSION_CLOSE_WITHIN})
         THEN ${closed} ELSE coalesce(${last}, ${opened}) END - ${opened}))))::int`;

const UUID_SQL = `'${UUID_PATTERN}'`;

/**
 * A window's session events from the table, by the rule sessionMark() applies to what the summaries hold (times to
 * the millisecond, as a summary keeps them). `$from`/`$to`: the window's parameters; `filter` narrows the rows read.
 */
const fromEvents = (from: string, to: string, filter: string) => `
  SELECT project_id, (props_string->>'session_id')::uuid AS session_id, platform_user_id AS user_id,
         CASE WHEN event_name = 'app_open' THEN date_trunc('milliseconds', event_date) END AS opened_at,
         CASE WHEN event_name = 'app_open' AND props_string->>'platform' ~ '^[a-z0-9_]{1,32}$'
              THEN CASE WHEN props_string->>'platform' IN (${PLATFORM_SQL}) THEN props_string->>'platform'
                        ELSE 'other' END
         END AS platform,
         CASE WHEN event_name <> 'app_close' THEN date_trunc('milliseconds', event_date) END AS last_at,
         CASE WHEN event_name = 'app_close' THEN date_trunc('milliseconds', event_date) END AS closed_at
  FROM events
  WHERE received_at > ${from}::text::timestamptz AND received_at <= ${to}::text::timestamptz${filter}
    AND channel = 'webapp'
    AND platform_user_id IS NOT NULL AND props_string->>'session_id' ~ ${UUID_SQL}
    AND event_date >= '0001-01-01T00:00:00Z' AND event_date < '10000-01-01T00:00:00Z'`;

/**
 * The per-day tables moved by `moves` (project_id, user_id, day, platform, seconds, n: +1 a session counted there,
 * -1 one no longer): sessions by day, by platform, by length, and the users with a session that day.
 */
const applyMoves = (moves: string) => `
, net AS (
  SELECT project_id, user_id, day, platform, seconds, sum(n)::bigint AS n FROM (${moves}) m
  GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0
), lengths AS (
  INSERT INTO report_session_lengths AS t (project_id, day, seconds, sessions)
  SELECT project_id, day, seconds, sum(n) FROM net GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, seconds) DO UPDATE SET sessions = t.sessions + excluded.sessions
  RETURNING 1
), platforms AS (
  INSERT INTO report_session_platforms AS t (project_id, day, platform, sessions)
  SELECT project_id, day, coalesce(platform, ''), sum(n) FROM net GROUP BY 1, 2, 3
  ON CONFLICT (project_id, day, platform) DO UPDATE SET sessions = t.sessions + excluded.sessions
  RETURNING 1
), per_user AS (
  SELECT project_id, day, user_id, sum(n) AS n FROM net GROUP BY 1, 2, 3
), counted AS (
  -- Each user's sessions that day before this statement (one primary-key probe each): a user counts while above 0.
  SELECT p.project_id, p.day, p.user_id, p.n, coalesce(u.sessions, 0) AS before
  FROM per_user p LEFT JOIN LATERAL (
    SELECT sessions FROM report_session_users u
    WHERE u.project_id = p.project_id AND u.day = p.day AND u.user_id = p.user_id
  ) u ON true
), users AS (
  INSERT INTO report_session_users AS t (project_id, day, user_id, sessions)
  SELECT project_id, day, user_id, n FROM per_user WHERE n <> 0
  ON CONFLICT (project_id, day, user_id) DO UPDATE SET sessions = t.sessions + excluded.sessions
  RETURNING 1
), days AS (
  INSERT INTO report_session_days AS t (project_id, day, sessions, users)
  SELECT project_id, day, sum(n),
         sum(CASE WHEN before <= 0 AND before + n > 0 THEN 1 WHEN before > 0 AND before + n <= 0 THEN -1 ELSE 0 END)
  FROM counted GROUP BY 1, 2
  ON CONFLICT (project_id, day) DO UPDATE SET sessions = t.sessions + excluded.sessions, users = t.users + excluded.users
  RETURNING 1
)`;

/** Folds a window's sessions (`base`: one row an event or a group of them) into report_sessions and the day tables. */
const fold = (base: string) => `
WITH b AS MATERIALIZED (
  -- Read once, by the window's index; grouped (and sorted for the platform of the earliest open) from here: inline,
  -- the planner would rather read a partition whole in the order of its unique index than sort a few rows.
  ${base}
), w AS (
  SELECT project_id, user_id, session_id, min(opened_at) AS opened_at,
         -- Two opens at one time: the platform first in order, as WindowSummaries picks it.
         (array_agg(platform ORDER BY opened_at, platform) FILTER (WHERE opened_at IS NOT NULL))[1] AS platform,
         max(last_at) AS last_at, max(closed_at) AS closed_at
  FROM b GROUP BY 1, 2, 3
), merged AS (
  SELECT w.project_id, w.user_id, w.session_id,
         CASE WHEN w.opened_at < o.opened_at OR o.opened_at IS NULL THEN w.opened_at ELSE o.opened_at END AS opened_at,
         CASE WHEN w.opened_at < o.opened_at OR o.opened_at IS NULL THEN w.platform ELSE o.platform END AS platform,
         greatest(o.last_at, w.last_at) AS last_at, greatest(o.closed_at, w.closed_at) AS closed_at,
         o.opened_at AS old_opened, o.platform AS old_platform, o.last_at AS old_last, o.closed_at AS old_closed
  -- One primary-key probe a session of the window.
  FROM w LEFT JOIN LATERAL (
    SELECT opened_at, platform, last_at, closed_at FROM report_sessions s
    WHERE s.project_id = w.project_id AND s.user_id = w.user_id AND s.session_id = w.session_id
  ) o ON true
), saved AS (
  INSERT INTO report_sessions AS s (project_id, user_id, session_id, opened_at, platform, last_at, closed_at)
  SELECT project_id, user_id, session_id, opened_at, platform, last_at, closed_at FROM merged
  ON CONFLICT (project_id, user_id, session_id) DO UPDATE SET
    opened_at = excluded.opened_at, platform = excluded.platform, last_at = excluded.last_at, closed_at = excluded.closed_at
  RETURNING 1
)${applyMoves(`
  SELECT project_id, user_id, (old_opened AT TIME ZONE 'UTC')::date AS day, old_platform AS platform,
         ${length('old_opened', 'old_last', 'old_closed')} AS seconds, -1 AS n
  FROM merged WHERE old_opened IS NOT NULL
  UNION ALL
  SELECT project_id, user_id, (opened_at AT TIME ZONE 'UTC')::date, platform,
         ${length('opened_at', 'last_at', 'closed_at')}, 1
  FROM merged WHERE opened_at IS NOT NULL`)}
SELECT (SELECT count(*) FROM w)::int AS sessions`;

/** A window read from the table: $1, $2 its bounds. */
export const FOLD_SESSIONS_EVENTS = fold(fromEvents('$1', '$2', ''));

/**
 * Summaries' sessions (WindowSummaries.sessionRows(): $1-$7), with the rows no summary holds received in ($8, $9].
 */
export const FOLD_SESSIONS_SUMMARIES = fold(`
  SELECT project_id, session_id, user_id, opened_at, platform, last_at, closed_at
  FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::timestamptz[], $5::text[], $6::timestamptz[], $7::timestamptz[])
    AS s(project_id, session_id, user_id, opened_at, platform, last_at, closed_at)
  UNION ALL
  ${fromEvents('$8', '$9', ' AND summarized IS NOT TRUE')}`);

/** An erasure's removal of users' sessions ($1 the project, $2 the users), and of what they counted. */
export const ERASE_SESSIONS = `
WITH gone AS (
  DELETE FROM report_sessions WHERE project_id = $1 AND user_id = ANY($2::bigint[]) RETURNING *
)${applyMoves(`
  SELECT project_id, user_id, (opened_at AT TIME ZONE 'UTC')::date AS day, platform,
         ${length('opened_at', 'last_at', 'closed_at')} AS seconds, -1 AS n
  FROM gone WHERE opened_at IS NOT NULL`)}
SELECT (SELECT count(*) FROM gone)::int AS sessions`;
