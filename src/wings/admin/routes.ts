// The admin API's provisioning: projects, bots, their tokens, a project's usage and this instance's live counts.
import { type AdminGuard, type AdminHooks, ajv, found, id, jsonBody } from '../../admin/api.js';
import { ADMIN_BODIES } from '../../admin/bodies.js';
import type { AdminStore, TokenLimits } from '../../admin/store.js';
import { HttpError } from '../../base/errors.js';
import type { Route } from '../../http/route.js';
import type { Reply } from '../../http/server.js';
import { adminOp, list, ok } from '../../openapi/admin.js';
import { ref } from '../../openapi/schemas.js';
import type { ProjectStats } from '../../quality/stats.js';

const schemas = {
  createProject: ajv.compile(ADMIN_BODIES.CreateProject),
  patchProject: ajv.compile(ADMIN_BODIES.PatchProject),
  createBot: ajv.compile(ADMIN_BODIES.CreateBot),
  patchBot: ajv.compile(ADMIN_BODIES.PatchBot),
  patchToken: ajv.compile(ADMIN_BODIES.PatchToken),
};

const toId = (v: number | string | null | undefined): string | null | undefined =>
  v === undefined ? undefined : v === null ? null : String(v);

/** A missing project (foreign key) is the caller's 404 and a taken messenger bot id their 409, not our 500. */
async function botWrite<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string };
    if (e.code === '23503') throw new HttpError('not_found', { message: 'No such project.' });
    if (e.code === '23505' && e.constraint_name === 'bots_messenger_bot_id_key')
      throw new HttpError('messenger_bot_id_taken');
    throw err;
  }
}

export interface ProvisioningOptions {
  guard: AdminGuard;
  stats: (projectId: string) => ProjectStats;
  hooks: AdminHooks;
}

export function provisioningRoutes(store: AdminStore, o: ProvisioningOptions): Route[] {
  const { guard, stats, hooks } = o;
  const reply = (status: number, body?: unknown): Reply => (body === undefined ? { status } : { status, body });

  return [
    {
      method: 'post',
      path: '/admin/projects',
      handler: guard(async (_req, rb) => {
        const b = await jsonBody<{ name: string; eventAllowance?: number | null }>(rb, schemas.createProject);
        const p = await store.createProject(b.name, b.eventAllowance ?? null);
        return reply(201, { projectId: p.projectId, project: p });
      }),
      operation: adminOp({
        operationId: 'createProject',
        summary: 'Create a project',
        body: 'CreateProject',
        success: { 201: ok('Created; no eventAllowance (or null) is unlimited.', ref('ProjectCreated')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects',
      handler: guard(async () => reply(200, await store.listProjects())),
      operation: adminOp({
        operationId: 'listProjects',
        summary: 'List projects',
        success: { 200: ok('Every project.', list('Project')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId',
      handler: guard(async (req) => reply(200, found(await store.getProject(id(req)), 'project'))),
      operation: adminOp({
        operationId: 'getProject',
        summary: 'Read a project',
        ids: ['ProjectId'],
        success: { 200: ok('The project.', ref('Project')) },
      }),
    },
    {
      method: 'patch',
      path: '/admin/projects/:projectId',
      handler: guard(async (req, rb) => {
        const projectId = id(req);
        const b = await jsonBody<{ name?: string; eventAllowance?: number | null }>(rb, schemas.patchProject);
        const p = found(await store.updateProject(projectId, b), 'project');
        hooks.allowanceChanged(projectId);
        return reply(200, p);
      }),
      operation: adminOp({
        operationId: 'patchProject',
        summary: 'Change a project or its allowance',
        ids: ['ProjectId'],
        body: 'PatchProject',
        success: { 200: ok('The changed project.', ref('Project')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/usage',
      handler: guard(async (req) => reply(200, found(await store.usage(id(req)), 'project'))),
      operation: adminOp({
        operationId: 'getProjectUsage',
        summary: "This calendar month's usage (UTC)",
        ids: ['ProjectId'],
        success: { 200: ok('Usage of the current month.', ref('Usage')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/stats',
      handler: guard(async (req) => {
        const projectId = id(req);
        found(await store.getProject(projectId), 'project');
        return reply(200, stats(projectId));
      }),
      operation: adminOp({
        operationId: 'getProjectStats',
        summary: "This instance's live counts",
        ids: ['ProjectId'],
        success: { 200: ok('The last 60 minutes and totals since start.', ref('ProjectStats')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/projects/:projectId/bots',
      handler: guard(async (req) => {
        const projectId = id(req);
        found(await store.getProject(projectId), 'project');
        return reply(200, await store.listBots(projectId));
      }),
      operation: adminOp({
        operationId: 'listProjectBots',
        summary: "A project's bots",
        ids: ['ProjectId'],
        success: { 200: ok('Bots linked to the project.', list('Bot')) },
      }),
    },
    {
      method: 'post',
      path: '/admin/bots',
      handler: guard(async (_req, rb) => {
        const b = await jsonBody<{
          messengerBotId?: number | string | null;
          projectId?: string | null;
          name?: string | null;
        }>(rb, schemas.createBot, {});
        const bot = await botWrite(
          store.createBot({
            messengerBotId: toId(b.messengerBotId) ?? null,
            projectId: b.projectId?.toLowerCase() ?? null,
            name: b.name ?? null,
          }),
        );
        return reply(201, { botId: bot.botId, bot });
      }),
      operation: adminOp({
        operationId: 'createBot',
        summary: 'Create a bot',
        description: 'Both switches (`miniAppIngest`, `apiIngest`) start on. An unknown `projectId` is 404.',
        body: 'CreateBot',
        bodyRequired: false,
        errors: ['not_found', 'messenger_bot_id_taken'],
        success: { 201: ok('Created.', ref('BotCreated')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/bots',
      handler: guard(async () => reply(200, await store.listBots())),
      operation: adminOp({
        operationId: 'listBots',
        summary: 'List bots',
        success: { 200: ok('Every bot.', list('Bot')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/bots/:botId',
      handler: guard(async (req) => reply(200, found(await store.getBot(id(req)), 'bot'))),
      operation: adminOp({
        operationId: 'getBot',
        summary: 'Read a bot',
        ids: ['BotId'],
        success: { 200: ok('The bot.', ref('Bot')) },
      }),
    },
    {
      method: 'patch',
      path: '/admin/bots/:botId',
      handler: guard(async (req, rb) => {
        const botId = id(req);
        const b = await jsonBody<{
          projectId?: string | null;
          messengerBotId?: number | string | null;
          miniAppIngest?: boolean;
          apiIngest?: boolean;
          name?: string | null;
        }>(rb, schemas.patchBot);
        const bot = found(
          await botWrite(
            store.updateBot(botId, {
              ...b,
              projectId: b.projectId === undefined ? undefined : (b.projectId?.toLowerCase() ?? null),
              messengerBotId: toId(b.messengerBotId),
            }),
          ),
          'bot',
        );
        hooks.botChanged(botId);
        return reply(200, bot);
      }),
      operation: adminOp({
        operationId: 'patchBot',
        summary: 'Change a bot',
        description: 'An unknown bot or `projectId` is 404.',
        ids: ['BotId'],
        body: 'PatchBot',
        errors: ['messenger_bot_id_taken'],
        success: { 200: ok('The changed bot.', ref('Bot')) },
      }),
    },
    {
      method: 'post',
      path: '/admin/bots/:botId/tokens',
      handler: guard(async (req) => {
        const t = found(await store.createToken(id(req)), 'bot');
        return reply(201, t);
      }),
      operation: adminOp({
        operationId: 'createToken',
        summary: 'Issue an API token for the bot_api endpoint',
        ids: ['BotId'],
        success: { 201: ok('The token; its value is shown this once.', ref('TokenCreated')) },
      }),
    },
    {
      method: 'get',
      path: '/admin/bots/:botId/tokens',
      handler: guard(async (req) => {
        const botId = id(req);
        found(await store.getBot(botId), 'bot');
        return reply(200, await store.listTokens(botId));
      }),
      operation: adminOp({
        operationId: 'listTokens',
        summary: "A bot's tokens",
        ids: ['BotId'],
        success: { 200: ok('Tokens without their values.', list('TokenSummary')) },
      }),
    },
    {
      method: 'del',
      path: '/admin/tokens/:tokenId',
      handler: guard(async (req) => {
        const tokenId = id(req);
        if (!(await store.revokeToken(tokenId))) throw new HttpError('not_found', { message: 'No such token.' });
        hooks.tokenChanged(tokenId);
        return reply(204);
      }),
      operation: adminOp({
        operationId: 'revokeToken',
        summary: 'Revoke a token',
        description:
          'Refused at once on this instance, within 2 × `AUTH_CACHE_TTL_MS` on others. Revoking twice keeps the first time.',
        ids: ['TokenId'],
        success: { 204: { description: 'Revoked.' } },
      }),
    },
    {
      method: 'patch',
      path: '/admin/tokens/:tokenId',
      handler: guard(async (req, rb) => {
        const tokenId = id(req);
        const limits = await jsonBody<TokenLimits>(rb, schemas.patchToken);
        const t = found(await store.setTokenLimits(tokenId, limits), 'token');
        hooks.tokenChanged(tokenId);
        return reply(200, t);
      }),
      operation: adminOp({
        operationId: 'patchToken',
        summary: "Set a token's rate limit",
        description:
          "Raises or lowers one token's bucket on the bot_api endpoint (a heavy tenant, a benchmark) without changing the service's defaults. In force at once on this instance, within 2 × `AUTH_CACHE_TTL_MS` on others.",
        ids: ['TokenId'],
        body: 'PatchToken',
        success: { 200: ok('The token, without its value.', ref('TokenSummary')) },
      }),
    },
  ];
}
