// The retention report's SQL (migration 18): the cells the fold keeps (src/reports/fold-sql.ts) and an erasure takes
// users out of. A cohort is the users whose first day (or that day's ISO week) and first campaign ('' for none) are
// the same; a cell, how many of them were active on a day (or in a week: a user once however many days), under the
// campaign and under NULL (every campaign: what the report reads without one). A report's range is at most 366 days,
// so no cell further from its cohort than that is kept: a user whose first day moves moves only those, whatever the
// days a client dates their events on.
import { MAX_REPORT_DAYS } from './range.js';

/** The furthest a day cell is from its cohort, in days. */
const RETENTION_DAYS = MAX_REPORT_DAYS - 1;
/** The furthest a week cell is from its cohort, in days (53 weeks: a range's Mondays span at most that). */
const RETENTION_WEEK_DAYS = 53 * 7;
/** A user's days that can be in a cell of a cohort beginning on `first`: up to this many days after it. */
export const RETENTION_SPAN = RETENTION_WEEK_DAYS + 6;

/** The Monday of a date's ISO week, as a date. */
export const WEEK = (day: string) => `date_trunc('week', (${day})::timestamp)::date`;

/** Each kind of cell: its table, the column of the day (week) it counts, its cohort from a first day, and its reach. */
const CELLS = {
  day: { cte: 'day_cells', table: 'report_retention', at: 'day', cohort: 'cohort', reach: RETENTION_DAYS },
  week: {
    cte: 'week_cells',
    table: 'report_retention_weeks',
    at: 'week',
    cohort: WEEK('cohort'),
    reach: RETENTION_WEEK_DAYS,
  },
} as const;

/**
 * Cells to add to (`rows`: project_id, cohort (a first day), day or week (a Monday), campaign, n), each under its
 * campaign and under NULL, those within reach of their cohort: a CTE to follow another.
 */
export const addToCells = (kind: keyof typeof CELLS, rows: string) => {
  const c = CELLS[kind];
  return `
, ${c.cte} AS (
  INSERT INTO ${c.table} AS t (project_id, cohort, ${c.at}, campaign, users)
  SELECT project_id, ${c.cohort}, ${c.at}, v.c, sum(n) FROM (${rows}) x
  CROSS JOIN LATERAL (VALUES (x.campaign), (NULL)) v(c)
  WHERE ${c.at} - ${c.cohort} BETWEEN 0 AND ${c.reach}
  GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
  ON CONFLICT (project_id, campaign, cohort, ${c.at}) DO UPDATE SET users = t.users + excluded.users
  RETURNING 1
)`;
};

/**
 * An erasure's removal of users ($1 the project, $2 the users) from the cells, with the days and weeks they were
 * active on; before their report_users rows go (their cohorts are read there), in the same transaction.
 */
export const ERASE_RETENTION = `
WITH users AS (
  SELECT user_id, first_day, coalesce(first_campaign, '') AS campaign FROM report_users
  WHERE project_id = $1 AND user_id = ANY($2::bigint[])
), days AS (
  SELECT u.user_id, u.first_day, u.campaign, a.day
  FROM users u JOIN report_active a
    ON a.project_id = $1 AND a.user_id = u.user_id AND a.day <= u.first_day + ${RETENTION_SPAN}
)${addToCells('day', `SELECT $1::uuid AS project_id, first_day AS cohort, day, campaign, -1 AS n FROM days`)}${addToCells(
  'week',
  `SELECT DISTINCT $1::uuid AS project_id, first_day AS cohort, ${WEEK('day')} AS week, campaign, -1 AS n, user_id
   FROM days`,
)}, active_weeks AS (
  DELETE FROM report_active_weeks WHERE project_id = $1 AND user_id = ANY($2::bigint[]) RETURNING 1
), active AS (
  DELETE FROM report_active WHERE project_id = $1 AND user_id = ANY($2::bigint[]) RETURNING 1
)
SELECT (SELECT count(*) FROM users)::int AS users`;

/**
 * The cells of cohorts from $2 to $3 ($1 the project), by day or by week (`by`), of one campaign ($4, '' for none;
 * `one`) or of all (the NULL rows): a row a cohort and a day (week) with users, read by the unique index's prefix.
 */
export const retentionCells = (by: keyof typeof CELLS, one: boolean) => {
  const { table, at } = CELLS[by];
  return `
SELECT cohort::text, ${at}::text AS at, users::float8 AS users FROM ${table}
WHERE project_id = $1 AND ${one ? 'campaign = $4::text' : 'campaign IS NULL'}
  AND cohort >= $2::text::date AND cohort <= $3::text::date AND ${at} <= $3::text::date AND users > 0`;
};
