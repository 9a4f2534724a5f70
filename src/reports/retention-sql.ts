// The retention report's SQL (migration 18): the cells the fold keeps (src/reports/fold-sql.ts) and an erasure takes
// users out of. A cohort is the users whose first day (or that day's ISO week) and first campaign ('' for none) are
// the same; a cell, how many of them were active on a day (or in a week: a user once however many days).

/** The Monday of a date's ISO week, as a date. */
export const WEEK = (day: string) => `date_trunc('week', (${day})::timestamp)::date`;

/**
 * An erasure's removal of users ($1 the project, $2 the users) from the cells, and of the weeks they were active in;
 * before their report_users rows go (their cohorts are read there).
 */
export const ERASE_RETENTION = `
WITH users AS (
  SELECT user_id, first_day, coalesce(first_campaign, '') AS campaign FROM report_users
  WHERE project_id = $1 AND user_id = ANY($2::bigint[])
), days AS (
  SELECT u.user_id, u.first_day, u.campaign, a.day
  FROM users u JOIN report_active a ON a.project_id = $1 AND a.user_id = u.user_id
), weeks AS (
  SELECT DISTINCT user_id, first_day, campaign, ${WEEK('day')} AS week FROM days
), day_cells AS (
  UPDATE report_retention t SET users = t.users - x.n
  FROM (SELECT first_day, day, campaign, count(*) AS n FROM days GROUP BY 1, 2, 3) x
  WHERE t.project_id = $1 AND t.cohort = x.first_day AND t.day = x.day AND t.campaign = x.campaign
  RETURNING 1
), week_cells AS (
  UPDATE report_retention_weeks t SET users = t.users - x.n
  FROM (SELECT ${WEEK('first_day')} AS cohort, week, campaign, count(*) AS n FROM weeks GROUP BY 1, 2, 3) x
  WHERE t.project_id = $1 AND t.cohort = x.cohort AND t.week = x.week AND t.campaign = x.campaign
  RETURNING 1
), active_weeks AS (
  DELETE FROM report_active_weeks w USING weeks x
  WHERE w.project_id = $1 AND w.week = x.week AND w.user_id = x.user_id
  RETURNING 1
)
SELECT (SELECT count(*) FROM users)::int AS users`;

/**
 * The cells of cohorts from $2 to $3 ($1 the project), by day or by week (`by`), of one campaign ($4, '' for none)
 * or of all (NULL): a row a cohort and a day (week) with users.
 */
export const retentionCells = (by: 'day' | 'week') => {
  const table = by === 'day' ? 'report_retention' : 'report_retention_weeks';
  const at = by === 'day' ? 'day' : 'week';
  return `
SELECT cohort::text, ${at}::text AS at, sum(users)::float8 AS users FROM ${table}
WHERE project_id = $1 AND cohort >= $2::text::date AND cohort <= $3::text::date AND ${at} <= $3::text::date
  AND ($4::text IS NULL OR campaign = $4::text)
GROUP BY 1, 2 HAVING sum(users) <> 0`;
};
