// Administration: provisioning of projects, bots and tokens, the admin page and the live view.
import { adminSchemas } from './schemas.js';
import type { Shared, Wing } from '../wing.js';
import { pageRoutes } from './page.js';
import { provisioningRoutes } from './routes.js';

export function adminWing(s: Shared): Wing {
  return {
    name: 'admin',
    schemas: adminSchemas(),
    routes: [
      // The page first: its routes are more specific than the API's.
      ...pageRoutes(s.live),
      ...provisioningRoutes(s.projects, {
        guard: s.guard,
        stats: (projectId) => s.stats.get(projectId),
        hooks: s.cacheHooks,
      }),
    ],
  };
}
