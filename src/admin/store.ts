// Provisioning queries: projects, bots, tokens, usage and reports.
import type { Sql } from '../db/connect.js';
import { newToken, type TokenTags } from '../auth/api-tokens.js';
import { readUsage, type Usage } from '../db/usage.js';

export interface Project {
  projectId: string;
  name: string;
  eventAllowance: number | null;
  createdAt: string;
  /** The version of the project's tracking plan; null: none. */
  trackingPlanVersion: number | null;
}

export interface Bot {
  botId: string;
  messengerBotId: number | null;
  projectId: string | null;
  miniAppIngest: boolean;
  apiIngest: boolean;
  name: string | null;
  description: string | null;
  starsAmount: number | null;
  snapshotAt: string | null;
  createdAt: string;
}

export interface TokenSummary {
  tokenId: string;
  botId: string;
  hint: string;
  createdAt: string;
  revokedAt: string | null;
  /** Written at most once a minute per instance: up to a minute behind. */
  lastUsedAt: string | null;
  /** Its own bucket; null: RATE_LIMIT_PER_MIN and RATE_LIMIT_BURST. */
  rateLimitPerMin: number | null;
  rateLimitBurst: number | null;
}

export interface TokenLimits {
  rateLimitPerMin?: number | null;
  rateLimitBurst?: number | null;
}

const num = (v: string | null): number | null => (v === null ? null : Number(v));
const iso = (v: Date | null): string | null => (v === null ? null : v.toISOString());

interface ProjectRow {
  project_id: string;
  name: string;
  event_allowance: string | null;
  created_at: Date;
  plan_version?: number | null;
}
const project = (r: ProjectRow): Project => ({
  projectId: r.project_id,
  name: r.name,
  eventAllowance: num(r.event_allowance),
  createdAt: r.created_at.toISOString(),
  trackingPlanVersion: r.plan_version ?? null,
});

interface BotRow {
  bot_id: string;
  messenger_bot_id: string | null;
  project_id: string | null;
  mini_app_ingest: boolean;
  api_ingest: boolean;
  name: string | null;
  description: string | null;
  stars_amount: string | null;
  snapshot_at: Date | null;
  created_at: Date;
}
const bot = (r: BotRow): Bot => ({
  botId: r.bot_id,
  messengerBotId: num(r.messenger_bot_id),
  projectId: r.project_id,
  miniAppIngest: r.mini_app_ingest,
  apiIngest: r.api_ingest,
  name: r.name,
  description: r.description,
  starsAmount: num(r.stars_amount),
  snapshotAt: iso(r.snapshot_at),
  createdAt: r.created_at.toISOString(),
});

interface TokenRow {
  token_id: string;
  bot_id: string;
  hint: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  rate_limit_per_min: number | null;
  rate_limit_burst: number | null;
}
const token = (r: TokenRow): TokenSummary => ({
  tokenId: r.token_id,
  botId: r.bot_id,
  hint: r.hint,
  createdAt: r.created_at.toISOString(),
  revokedAt: iso(r.revoked_at),
  lastUsedAt: iso(r.last_used_at),
  rateLimitPerMin: r.rate_limit_per_min,
  rateLimitBurst: r.rate_limit_burst,
});
const TOKEN_COLUMNS =
  'token_id, bot_id, hint, created_at, revoked_at, last_used_at, rate_limit_per_min, rate_limit_burst';

export class AdminStore {
  constructor(
    private readonly sql: Sql,
    private readonly tags: TokenTags,
  ) {}

  async createProject(name: string, eventAllowance: number | null): Promise<Project> {
    const [r] = await this.sql<
      ProjectRow[]
    >`INSERT INTO projects (name, event_allowance) VALUES (${name}, ${eventAllowance}) RETURNING *`;
    return project(r!);
  }

  async listProjects(): Promise<Project[]> {
    return (
      await this.sql<ProjectRow[]>`
        SELECT p.*, t.version AS plan_version FROM projects p LEFT JOIN tracking_plans t USING (project_id)
        ORDER BY p.created_at, p.project_id`
    ).map(project);
  }

  async getProject(projectId: string): Promise<Project | null> {
    const [r] = await this.sql<ProjectRow[]>`
      SELECT p.*, t.version AS plan_version FROM projects p LEFT JOIN tracking_plans t USING (project_id)
      WHERE p.project_id = ${projectId}`;
    return r === undefined ? null : project(r);
  }

  async updateProject(
    projectId: string,
    patch: { name?: string; eventAllowance?: number | null },
  ): Promise<Project | null> {
    const [r] = await this.sql<ProjectRow[]>`
      UPDATE projects SET
        name = CASE WHEN ${patch.name !== undefined} THEN ${patch.name ?? null}::text ELSE name END,
        event_allowance = CASE WHEN ${patch.eventAllowance !== undefined} THEN ${patch.eventAllowance ?? null}::bigint ELSE event_allowance END
      WHERE project_id = ${projectId} RETURNING *, (SELECT version FROM tracking_plans t WHERE t.project_id = projects.project_id) AS plan_version`;
    return r === undefined ? null : project(r);
  }

  usage(projectId: string): Promise<Usage | null> {
    return readUsage(this.sql, projectId);
  }

  async createBot(b: { messengerBotId: string | null; projectId: string | null; name: string | null }): Promise<Bot> {
    const [r] = await this.sql<BotRow[]>`
      INSERT INTO bots (messenger_bot_id, project_id, name) VALUES (${b.messengerBotId}, ${b.projectId}, ${b.name}) RETURNING *`;
    return bot(r!);
  }

  async listBots(projectId?: string): Promise<Bot[]> {
    const rows =
      projectId === undefined
        ? await this.sql<BotRow[]>`SELECT * FROM bots ORDER BY created_at, bot_id`
        : await this.sql<BotRow[]>`SELECT * FROM bots WHERE project_id = ${projectId} ORDER BY created_at, bot_id`;
    return rows.map(bot);
  }

  async getBot(botId: string): Promise<Bot | null> {
    const [r] = await this.sql<BotRow[]>`SELECT * FROM bots WHERE bot_id = ${botId}`;
    return r === undefined ? null : bot(r);
  }

  async updateBot(
    botId: string,
    p: {
      projectId?: string | null;
      messengerBotId?: string | null;
      miniAppIngest?: boolean;
      apiIngest?: boolean;
      name?: string | null;
    },
  ): Promise<Bot | null> {
    const [r] = await this.sql<BotRow[]>`
      UPDATE bots SET
        project_id = CASE WHEN ${p.projectId !== undefined} THEN ${p.projectId ?? null}::uuid ELSE project_id END,
        messenger_bot_id = CASE WHEN ${p.messengerBotId !== undefined} THEN ${p.messengerBotId ?? null}::bigint ELSE messenger_bot_id END,
        mini_app_ingest = coalesce(${p.miniAppIngest ?? null}::boolean, mini_app_ingest),
        api_ingest = coalesce(${p.apiIngest ?? null}::boolean, api_ingest),
        name = CASE WHEN ${p.name !== undefined} THEN ${p.name ?? null}::text ELSE name END
      WHERE bot_id = ${botId} RETURNING *`;
    return r === undefined ? null : bot(r);
  }

  /** The token's value exists only in this return value. */
  async createToken(botId: string): Promise<{ tokenId: string; token: string; hint: string } | null> {
    const t = newToken(this.tags);
    const rows = await this.sql<{ token_id: string }[]>`
      INSERT INTO api_tokens (bot_id, token_hash, hint, tagged)
      SELECT bot_id, ${t.hash}, ${t.hint}, true FROM bots WHERE bot_id = ${botId}
      RETURNING token_id`;
    return rows[0] === undefined ? null : { tokenId: rows[0].token_id, token: t.token, hint: t.hint };
  }

  async listTokens(botId: string): Promise<TokenSummary[]> {
    return (
      await this.sql<
        TokenRow[]
      >`SELECT ${this.sql.unsafe(TOKEN_COLUMNS)} FROM api_tokens WHERE bot_id = ${botId} ORDER BY created_at, token_id`
    ).map(token);
  }

  /** The token's own bucket (a field left out stays, null is the default's); null when there is no such token. */
  async setTokenLimits(tokenId: string, limits: TokenLimits): Promise<TokenSummary | null> {
    const [row] = await this.sql<TokenRow[]>`
      UPDATE api_tokens SET
        rate_limit_per_min = ${limits.rateLimitPerMin === undefined ? this.sql`rate_limit_per_min` : limits.rateLimitPerMin},
        rate_limit_burst = ${limits.rateLimitBurst === undefined ? this.sql`rate_limit_burst` : limits.rateLimitBurst}
      WHERE token_id = ${tokenId}
      RETURNING ${this.sql.unsafe(TOKEN_COLUMNS)}`;
    return row === undefined ? null : token(row);
  }

  /** False when there is no such token. Revoking twice keeps the first revocation time. */
  async revokeToken(tokenId: string): Promise<boolean> {
    const rows = await this
      .sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE token_id = ${tokenId} RETURNING token_id`;
    return rows.length > 0;
  }
}
