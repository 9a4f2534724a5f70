// Privacy: erasure requests and the eraser that carries them out in the background (the other wings' parts of an
// erasure through `hooks.erasureParts`), suppressions, and a user's data exported.
import { Eraser } from '../../privacy/eraser.js';
import { PrivacyStore } from '../../privacy/store.js';
import { privacySchemas } from './schemas.js';
import type { Shared, Wing } from '../wing.js';
import { privacyRoutes } from './routes.js';

export function privacyWing(s: Shared): Wing {
  const eraser = new Eraser(
    s.sql,
    {
      usersPerStep: s.config.erasureUsersPerStep,
      pollMs: 1000,
      settleMs: 2 * s.config.authCacheTtlMs + s.config.writeTimeoutMs,
    },
    s.log,
    s.hooks.erasureParts,
  );
  return {
    name: 'privacy',
    schemas: privacySchemas(),
    routes: privacyRoutes(s.projects, new PrivacyStore(s.sql), {
      guard: s.guard,
      hooks: s.cacheHooks,
      sql: s.sql,
      erasureRequested: () => eraser.wake(),
    }),
    start: () => eraser.start(),
    stop: () => eraser.stop(),
  };
}
