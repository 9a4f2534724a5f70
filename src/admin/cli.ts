// `npm run admin -- <command>`: the admin API for a person at a terminal. Prints JSON.
// The token comes from ADMIN_TOKEN or DATA_DIR/admin-token; the service from ADMIN_URL or
// http://127.0.0.1:$PORT.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
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

environment: ADMIN_URL (default http://127.0.0.1:$PORT, PORT default 8080),
             ADMIN_TOKEN (default: the contents of $DATA_DIR/admin-token, DATA_DIR default ./.data)`;

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
      return { method: 'POST', path: '/admin/projects', body: { name: need(p[0], 'name'), ...(allowance === undefined ? {} : { eventAllowance: integer(allowance, '--allowance') }) } };
    }
    case 'project list': return { method: 'GET', path: '/admin/projects' };
    case 'project show': return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}` };
    case 'project set-allowance': {
      const v = need(p[1], 'allowance');
      return { method: 'PATCH', path: `/admin/projects/${need(p[0], 'projectId')}`, body: { eventAllowance: v === 'unlimited' ? null : integer(v, 'allowance') } };
    }
    case 'project usage': return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/usage` };
    case 'project revenue': return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/reports/revenue` };
    case 'bot create': {
      const body: Record<string, unknown> = {};
      if (flags.has('project')) body.projectId = flags.get('project');
      if (flags.has('messenger-bot-id')) body.messengerBotId = flags.get('messenger-bot-id');
      if (flags.has('name')) body.name = flags.get('name');
      return { method: 'POST', path: '/admin/bots', body };
    }
    case 'bot list': return flags.has('project') ? { method: 'GET', path: `/admin/projects/${flags.get('project')}/bots` } : { method: 'GET', path: '/admin/bots' };
    case 'bot show': return { method: 'GET', path: `/admin/bots/${need(p[0], 'botId')}` };
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
    case 'token create': return { method: 'POST', path: `/admin/bots/${need(p[0], 'botId')}/tokens` };
    case 'token list': return { method: 'GET', path: `/admin/bots/${need(p[0], 'botId')}/tokens` };
    case 'token revoke': return { method: 'DELETE', path: `/admin/tokens/${need(p[0], 'tokenId')}` };
    default: throw new UsageError(argv.length === 0 ? 'no command given' : `unknown command "${key.trim()}"`);
  }
}

function adminToken(): string {
  const fromEnv = process.env.ADMIN_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  const path = adminTokenPath(resolve(process.env.DATA_DIR?.trim() || './.data'));
  if (!existsSync(path)) throw new UsageError(`no ADMIN_TOKEN and no ${path}: start the service once, or set ADMIN_TOKEN`);
  return readFileSync(path, 'utf8').trim();
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let request;
  let token;
  try {
    request = plan(argv);
    token = adminToken();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  const base = process.env.ADMIN_URL?.trim() || `http://127.0.0.1:${process.env.PORT?.trim() || '8080'}`;
  let res: Response;
  try {
    res = await fetch(`${base}${request.path}`, {
      method: request.method,
      headers: { authorization: `Bearer ${token}`, ...(request.body === undefined ? {} : { 'content-type': 'application/json' }) },
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
  main().then((code) => process.exit(code), (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
