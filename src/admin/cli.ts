// `npm run admin -- <command>`: the admin API for a person at a terminal. Prints JSON.
// The token comes from ADMIN_TOKEN or DATA_DIR/admin-token; the service from ADMIN_URL, else the
// running service's own note in DATA_DIR, else http://127.0.0.1:$PORT.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCliEnv } from '../config.js';
import { readRuntime } from '../data-dir.js';
import { SERVICE_DATABASE, SERVICE_ROLE } from '../db/embedded.js';
import { adminTokenPath } from './admin-token.js';

const USAGE = `usage: npm run admin -- <command>

  project create <name> [--allowance <n>]     create a project (no allowance: unlimited)
  project list
  project show <projectId>
  project set-allowance <projectId> <n|unlimited>
  project usage <projectId>                   events billed and stored this month
  project revenue <projectId>                 revenue report of payments on the bot-API channel
  bot create [--project <id>] [--messenger-bot-id <n>] [--name <s>]
  bot list [--project <id>]
  bot show <botId>
  bot update <botId> [--project <id|none>] [--messenger-bot-id <n|none>] [--mini-app on|off] [--api on|off]
  token create <botId>                        prints the token: it is shown this once
  token list <botId>
  token revoke <tokenId>
  db                                          a psql-ready connection string for the embedded database

The running service is found through DATA_DIR (default ./.data), where it notes its address.
environment: ADMIN_URL (default: that address, else http://127.0.0.1:$PORT, PORT default 8080),
             ADMIN_TOKEN (default: the contents of $DATA_DIR/admin-token), DATA_DIR`;

class UsageError extends Error {}

function options(args: string[]): { positional: string[]; flags: Map<string, string> } {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--')) {
      const v = args[i + 1];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      flags.set(a.slice(2), v);
      i++;
    } else positional.push(a);
  }
  return { positional, flags };
}

function onOff(v: string | undefined, flag: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  throw new UsageError(`--${flag} takes on or off`);
}

function need(v: string | undefined, what: string): string {
  if (v === undefined) throw new UsageError(`missing ${what}`);
  return v;
}

function integer(v: string, what: string): number {
  if (!/^\d+$/.test(v)) throw new UsageError(`${what} must be a non-negative integer`);
  return Number(v);
}

export function plan(argv: string[]): { method: string; path: string; body?: unknown } {
  const [noun, verb, ...rest] = argv;
  const { positional: p, flags } = options(rest);
  const key = `${noun ?? ''} ${verb ?? ''}`;
  switch (key) {
    case 'project create': {
      const allowance = flags.get('allowance');
      return {
        method: 'POST',
        path: '/admin/projects',
        body: {
          name: need(p[0], 'name'),
          ...(allowance === undefined ? {} : { eventAllowance: integer(allowance, '--allowance') }),
        },
      };
    }
    case 'project list':
      return { method: 'GET', path: '/admin/projects' };
    case 'project show':
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}` };
    case 'project set-allowance': {
      const v = need(p[1], 'allowance');
      return {
        method: 'PATCH',
        path: `/admin/projects/${need(p[0], 'projectId')}`,
        body: { eventAllowance: v === 'unlimited' ? null : integer(v, 'allowance') },
      };
    }
    case 'project usage':
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/usage` };
    case 'project revenue':
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/reports/revenue` };
    case 'bot create': {
      const body: Record<string, unknown> = {};
      if (flags.has('project')) body.projectId = flags.get('project');
      if (flags.has('messenger-bot-id')) body.messengerBotId = flags.get('messenger-bot-id');
      if (flags.has('name')) body.name = flags.get('name');
      return { method: 'POST', path: '/admin/bots', body };
    }
    case 'bot list':
      return flags.has('project')
        ? { method: 'GET', path: `/admin/projects/${flags.get('project')}/bots` }
        : { method: 'GET', path: '/admin/bots' };
    case 'bot show':
      return { method: 'GET', path: `/admin/bots/${need(p[0], 'botId')}` };
    case 'bot update': {
      const body: Record<string, unknown> = {};
      const project = flags.get('project');
      if (project !== undefined) body.projectId = project === 'none' ? null : project;
      const mid = flags.get('messenger-bot-id');
      if (mid !== undefined) body.messengerBotId = mid === 'none' ? null : mid;
      const mini = onOff(flags.get('mini-app'), 'mini-app');
      if (mini !== undefined) body.miniAppIngest = mini;
      const api = onOff(flags.get('api'), 'api');
      if (api !== undefined) body.apiIngest = api;
      if (Object.keys(body).length === 0) throw new UsageError('bot update needs at least one option');
      return { method: 'PATCH', path: `/admin/bots/${need(p[0], 'botId')}`, body };
    }
    case 'token create':
      return { method: 'POST', path: `/admin/bots/${need(p[0], 'botId')}/tokens` };
    case 'token list':
      return { method: 'GET', path: `/admin/bots/${need(p[0], 'botId')}/tokens` };
    case 'token revoke':
      return { method: 'DELETE', path: `/admin/tokens/${need(p[0], 'tokenId')}` };
    default:
      throw new UsageError(argv.length === 0 ? 'no command given' : `unknown command "${key.trim()}"`);
  }
}

type CliEnv = ReturnType<typeof readCliEnv>;

function adminToken(env: CliEnv): string {
  if (env.adminToken !== null) return env.adminToken;
  const path = adminTokenPath(env.dataDir);
  if (!existsSync(path))
    throw new UsageError(
      `no ADMIN_TOKEN and no ${path}: start the service once (make run), or set ADMIN_TOKEN (and DATA_DIR if the service uses another one)`,
    );
  return readFileSync(path, 'utf8').trim();
}

function serviceUrl(env: CliEnv): string {
  return env.adminUrl ?? readRuntime(env.dataDir)?.adminUrl ?? `http://127.0.0.1:${env.port}`;
}

/** The embedded database's connection string, as the service's role; or DATABASE_URL when the service uses that. */
function databaseUrl(env: CliEnv): string {
  if (env.databaseUrl !== null) return env.databaseUrl;
  const cluster = join(env.dataDir, 'postgres');
  const pidFile = join(cluster, 'postmaster.pid');
  const passwordFile = join(env.dataDir, 'service-password');
  if (!existsSync(pidFile) || !existsSync(passwordFile))
    throw new UsageError(
      `no embedded PostgreSQL is running in ${cluster}: start the service (make run), or set DATA_DIR`,
    );
  const port = Number(readFileSync(pidFile, 'utf8').split('\n')[3]);
  const password = readFileSync(passwordFile, 'utf8').trim();
  return `postgres://${SERVICE_ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/${SERVICE_DATABASE}`;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const env = readCliEnv();
  let request: { method: string; path: string; body?: unknown } | undefined;
  let token: string | undefined;
  try {
    if (argv[0] === 'db' && argv.length === 1) {
      process.stdout.write(`${databaseUrl(env)}\n`);
      return 0;
    }
    request = plan(argv);
    token = adminToken(env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  const base = serviceUrl(env);
  let res: Response;
  try {
    res = await fetch(`${base}${request.path}`, {
      method: request.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
  } catch (err) {
    process.stderr.write(`cannot reach the service at ${base}: ${(err as Error).message}\n`);
    return 1;
  }
  const text = await res.text();
  const out = text === '' ? { status: res.status } : JSON.parse(text);
  (res.ok ? process.stdout : process.stderr).write(`${JSON.stringify(out, null, 2)}\n`);
  return res.ok ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
