// Event quality: tracking plans, the quarantine and its replay, and the pruner that keeps the quarantine within its
// bounds in the background.
import { QuarantinePruner } from '../../quality/pruner.js';
import { qualitySchemas } from './schemas.js';
import type { Shared, Wing } from '../wing.js';
import { qualityRoutes } from './routes.js';

export function qualityWing(s: Shared): Wing {
  const { config } = s;
  const pruner = new QuarantinePruner(
    s.quality,
    {
      maxEvents: config.quarantineMaxEvents,
      retentionDays: config.quarantineRetentionDays,
      everyMs: config.quarantinePruneEveryMs,
      flushDropped: () => s.quarantineBudget.flush(),
    },
    s.log,
  );
  s.hooks.quarantined.push((projectId) => pruner.quarantined(projectId));
  return {
    name: 'quality',
    schemas: qualitySchemas(),
    routes: qualityRoutes(s.projects, s.quality, {
      guard: s.guard,
      hooks: s.cacheHooks,
      maxJsonDepth: config.maxJsonDepth,
      compile: (plan) => s.pool.compilePlan(plan),
      replay: {
        sql: s.sql,
        sink: s.sink,
        quota: s.quota,
        plans: s.plans,
        suppressed: (projectId) => s.suppressions.get(projectId),
        recheck: (items) => s.pool.recheck(items, config.maxJsonDepth),
        onReplayed: (r) => s.metrics.replay(r),
      },
    }),
    stop: () => pruner.stop(),
  };
}
