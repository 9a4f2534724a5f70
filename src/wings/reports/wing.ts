// Reports: the aggregator that folds stored events into the report tables in the background, the routes that read
// them, and the reports' part of every erasure.
import { ReportAggregator } from '../../reports/aggregator.js';
import { reportsErasure } from '../../reports/erasure.js';
import { ReportStore } from '../../reports/queries.js';
import type { Shared, Wing } from '../wing.js';
import { reportsRoutes } from './routes.js';
import { reportsSchemas } from './schemas.js';

export function reportsWing(s: Shared): Wing {
  const aggregator = new ReportAggregator(
    s.sql,
    { everyMs: s.config.reportsEveryMs, historyLagMs: s.config.writeTimeoutMs },
    s.log,
  );
  s.caches.set('filed_users', () => aggregator.filedUsersStats);
  s.hooks.erasureParts.push(reportsErasure(s.log));
  return {
    name: 'reports',
    schemas: reportsSchemas(),
    routes: reportsRoutes(s.projects, new ReportStore(s.sql), s.guard),
    start: () => aggregator.start(),
    stop: () => aggregator.stop(),
  };
}
