// Versioned schema migrations, one file each, in the order they are applied. Append new versions; never edit an
// applied one (upgrading in docs/operations.md says what each locks).
import type { Migration } from './migration.js';
import { migration as v1 } from './001-initial-schema.js';
import { migration as v2 } from './002-one-free-report-of-a-messenger-action.js';
import { migration as v3 } from './003-tracking-plans-and-the-quarantine.js';
import { migration as v4 } from './004-events-partitioned-by-month-of-received.js';
import { migration as v5 } from './005-allowance-leased-to-instances.js';
import { migration as v6 } from './006-api-tokens-tagged-under-a-deployment.js';
import { migration as v7 } from './007-quarantine-usage-per-project.js';
import { migration as v8 } from './008-when-a-token-was-last-used.js';
import { migration as v9 } from './009-report-aggregates.js';
import { migration as v10 } from './010-campaign-aggregates.js';
import { migration as v11 } from './011-erasures-and-suppressions.js';
import { migration as v12 } from './012-report-summaries.js';
import { migration as v13 } from './013-report-users-changed-by-others.js';
import { migration as v14 } from './014-per-token-rate-limits.js';
import { migration as v15 } from './015-events-findable-by-user.js';
import { migration as v16 } from './016-mini-app-sessions.js';
import { migration as v17 } from './017-reports-follow-commits.js';
import { migration as v18 } from './018-retention.js';
import { migration as v19 } from './019-the-lake.js';

export const MIGRATIONS: readonly Migration[] = [
  v1,
  v2,
  v3,
  v4,
  v5,
  v6,
  v7,
  v8,
  v9,
  v10,
  v11,
  v12,
  v13,
  v14,
  v15,
  v16,
  v17,
  v18,
  v19,
];
