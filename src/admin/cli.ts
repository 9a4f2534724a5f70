// `npm run admin -- <command>`: the admin API for a person at a terminal. Prints JSON.
// The token comes from ADMIN_TOKEN or DATA_DIR/admin-token; the service from ADMIN_URL, else the
// running service's own note in DATA_DIR, else http://127.0.0.1:$PORT.
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { loadDevKey, signInitData } from '../auth/dev-key.js';
import { readCliEnv } from '../config/config.js';
import { DataDirInUse, lockDataDir, readRuntime } from '../config/data-dir.js';
import { BackupError, backup, restore } from '../db/backup.js';
import { SERVICE_DATABASE, SERVICE_ROLE } from '../db/embedded.js';
import { adminTokenPath } from './admin-token.js';
import { renderTable } from './table.js';

const USAGE = `usage: npm run admin -- <command> [--table]

  project create <name> [--allowance <n>]     create a project (no allowance: unlimited)
  project list
  project show <projectId>
  project set-allowance <projectId> <n|unlimited>
  project usage <projectId>                   events billed and stored this month
  project revenue <projectId>                 the same as report revenue (kept for scripts)
  bot create [--project <id>] [--messenger-bot-id <n>] [--name <s>]
  bot list [--project <id>]
  bot show <botId>
  bot update <botId> [--project <id|none>] [--messenger-bot-id <n|none>] [--mini-app on|off] [--api on|off]
  token create <botId>                        prints the token: it is shown this once
  token list <botId>                          with when each was last used
  token revoke <tokenId>
  token set-limit <tokenId> <perMin|default> [--burst <n|default>]
                                              its own bot_api bucket (default: the service's)
  report daily <projectId> [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>]
                                              events, active and new users per day (default: 30 days)
  report retention <projectId> [--from <day>] [--to <day>] [--by day|week] [--campaign <c>]
                                              new users by first day (week) and how many came back
  report revenue <projectId> [--from <day>] [--to <day>] [--by day]
                                              payments, refunds and net per currency
  report campaigns <projectId> [--from <day>] [--to <day>] [--limit <n>]
                                              new and active users, payers, net revenue per campaign
  report sessions <projectId> [--from <day>] [--to <day>]
                                              mini-app sessions, users, lengths, platforms per day
  report funnel <projectId> <step> <step>... --from <day> --to <day> --window <seconds> [--by campaign|platform]
                                              users through the steps in order; a step is an event name,
                                              or name:property<op>value with op = != > < (value as JSON,
                                              else a string), e.g. purchase:amount>100
  export <projectId>                          how far the lake (Parquet under EXPORT_DIR) is
  plan get <projectId>                        the project's tracking plan
  plan put <projectId> <file>                 set it from a JSON file
  plan delete <projectId>
  quarantine list <projectId> [--code <c>] [--limit <n>] [--before <cursor>]
  quarantine summary <projectId>              rejected events per diagnostic code
  quarantine replay <projectId> [--code <c>] [--ids <id,id,...>] [--dry-run]
  quarantine delete <projectId> [--code <c>]
  user erase <projectId> <userId>... [--suppress]
                                              erase users' data in the background (prints the erasure
                                              to poll with user erasure); --suppress keeps them out
  user erasure <projectId> <erasureId>        an erasure's progress
  user unsuppress <projectId> <userId>        store the user's events again
  user export <projectId> <userId>            everything held on the user, as NDJSON
  stats <projectId>                           what this instance ingested for the project since it started
  initdata <botId> [--user <id>] [--start-param <p>]
                                              a fresh initData signed with the development key, for the
                                              webapp endpoint (the service trusts that key with the
                                              embedded database, or with INITDATA_DEV_KEY_FILE)
  db                                          a psql-ready connection string for the embedded database
  backup </abs/dir>                           a consistent backup of the embedded database (and DATA_DIR's
                                              passwords, admin token and development key) while it runs
  restore </abs/dir>                          a backup into DATA_DIR, which must hold nothing yet; the
                                              service started there opens the data as the backup left it

Every command prints JSON; --table prints a table instead.
The running service is found through DATA_DIR (default ./.data), where it notes its address.
environment: ADMIN_URL (default: that address, else http://127.0.0.1:$PORT, PORT default 8080),
             ADMIN_TOKEN (default: the contents of $DATA_DIR/admin-token), DATA_DIR,
             INITDATA_DEV_KEY_FILE (default $DATA_DIR/initdata-dev-key.pem)`;

class UsageError extends Error {}

/** Flags that take no value. */
const SWITCHES = new Set(['table', 'dry-run', 'suppress']);

function options(args: string[]): { positional: string[]; flags: Map<string, string> } {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--')) {
      const name = a.slice(2);
      if (SWITCHES.has(name)) {
        flags.set(name, 'true');
        continue;
      }
      const v = args[i + 1];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      flags.set(name, v);
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

/** `name`, or `name:property<op>value`: the value as JSON when it parses (a number, true, "text"), else a string. */
function funnelStep(arg: string): Record<string, unknown> {
  const m = /^([^:]+):([^=!<>]+)(!=|=|>|<)(.*)$/s.exec(arg);
  if (m === null) return { eventName: arg };
  let value: unknown = m[4];
  try {
    value = JSON.parse(m[4]!);
  } catch {
    // a bare word: a string
  }
  return { eventName: m[1], where: { property: m[2], op: m[3], value } };
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
    case 'token set-limit': {
      const perMin = need(p[1], 'perMin');
      const burst = flags.get('burst');
      return {
        method: 'PATCH',
        path: `/admin/tokens/${need(p[0], 'tokenId')}`,
        body: {
          rateLimitPerMin: perMin === 'default' ? null : integer(perMin, 'perMin'),
          ...(burst === undefined ? {} : { rateLimitBurst: burst === 'default' ? null : integer(burst, '--burst') }),
        },
      };
    }
    case 'report daily':
    case 'report retention':
    case 'report revenue':
    case 'report campaigns':
    case 'report sessions': {
      const q = new URLSearchParams();
      for (const f of ['from', 'to', 'by', 'limit', 'campaign']) if (flags.has(f)) q.set(f, flags.get(f)!);
      const query = q.size > 0 ? `?${q}` : '';
      return {
        method: 'GET',
        path: `/admin/projects/${encodeURIComponent(need(p[0], 'projectId'))}/reports/${verb}${query}`,
      };
    }
    case 'report funnel': {
      const [projectId, ...steps] = p;
      const by = flags.get('by');
      return {
        method: 'POST',
        path: `/admin/projects/${encodeURIComponent(need(projectId, 'projectId'))}/reports/funnel`,
        body: {
          steps: steps.map(funnelStep),
          from: need(flags.get('from'), '--from'),
          to: need(flags.get('to'), '--to'),
          windowS: integer(need(flags.get('window'), '--window'), '--window'),
          ...(by === undefined ? {} : { by }),
        },
      };
    }
    case 'plan get':
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/tracking-plan` };
    case 'plan put':
      return {
        method: 'PUT',
        path: `/admin/projects/${need(p[0], 'projectId')}/tracking-plan`,
        body: jsonFile(need(p[1], 'file')),
      };
    case 'plan delete':
      return { method: 'DELETE', path: `/admin/projects/${need(p[0], 'projectId')}/tracking-plan` };
    case 'quarantine list': {
      const q = new URLSearchParams();
      for (const f of ['code', 'limit', 'before']) if (flags.has(f)) q.set(f, flags.get(f)!);
      const query = q.size > 0 ? `?${q}` : '';
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/quarantine${query}` };
    }
    case 'quarantine summary':
      return { method: 'GET', path: `/admin/projects/${need(p[0], 'projectId')}/quarantine/summary` };
    case 'quarantine replay': {
      const body: Record<string, unknown> = {};
      if (flags.has('code')) body.code = flags.get('code');
      if (flags.has('ids'))
        body.ids = flags
          .get('ids')!
          .split(',')
          .filter((id) => id !== '');
      if (flags.has('dry-run')) body.dryRun = true;
      return { method: 'POST', path: `/admin/projects/${need(p[0], 'projectId')}/quarantine/replay`, body };
    }
    case 'user erase':
      if (p.length < 2) throw new UsageError('missing userId');
      return {
        method: 'POST',
        path: `/admin/projects/${encodeURIComponent(p[0]!)}/erasures`,
        body: { userIds: p.slice(1), suppress: flags.has('suppress') },
      };
    case 'user erasure':
      return {
        method: 'GET',
        path: `/admin/projects/${encodeURIComponent(need(p[0], 'projectId'))}/erasures/${encodeURIComponent(need(p[1], 'erasureId'))}`,
      };
    case 'user unsuppress':
      return {
        method: 'DELETE',
        path: `/admin/projects/${encodeURIComponent(need(p[0], 'projectId'))}/suppressions/${encodeURIComponent(need(p[1], 'userId'))}`,
      };
    case 'user export':
      return {
        method: 'GET',
        path: `/admin/projects/${encodeURIComponent(need(p[0], 'projectId'))}/users/${encodeURIComponent(need(p[1], 'userId'))}/export`,
      };
    case 'quarantine delete': {
      const code = flags.get('code');
      const query = code === undefined ? '' : `?${new URLSearchParams({ code })}`;
      return { method: 'DELETE', path: `/admin/projects/${need(p[0], 'projectId')}/quarantine${query}` };
    }
    default:
      // A project's one-word reads: `stats <projectId>`, `export <projectId>`.
      if (noun === 'stats' || noun === 'export') {
        const { positional } = options(argv.slice(1));
        return {
          method: 'GET',
          path: `/admin/projects/${encodeURIComponent(need(positional[0], 'projectId'))}/${noun}`,
        };
      }
      throw new UsageError(argv.length === 0 ? 'no command given' : `unknown command "${key.trim()}"`);
  }
}

function jsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${path} is not JSON: ${(err as Error).message}`);
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

/** One admin API call; the answer's body parsed (null when empty). */
async function request(
  env: CliEnv,
  token: string,
  r: { method: string; path: string; body?: unknown },
): Promise<{ ok: boolean; status: number; body: unknown }> {
  const base = serviceUrl(env);
  let res: Response;
  try {
    res = await fetch(`${base}${r.path}`, {
      method: r.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(r.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: r.body === undefined ? undefined : JSON.stringify(r.body),
    });
  } catch (err) {
    throw new Unreachable(`cannot reach the service at ${base}: ${(err as Error).message}`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // Not the service (a proxy's page): shown as it came.
    body = { status: res.status, text: text.slice(0, 2000) };
  }
  return { ok: res.ok, status: res.status, body };
}

class Unreachable extends Error {}

/** `initdata <botId>`: the bot's messenger id from the admin API, then a signature made here with the dev key. */
async function initData(env: CliEnv, token: string, argv: string[]): Promise<number> {
  const { positional: p, flags } = options(argv.slice(1));
  const botId = need(p[0], 'botId');
  const user = flags.get('user') ?? '100000001';
  // initData carries the id as a JSON number: the service takes it up to 2^53 - 1, as the messenger's ids are.
  if (!/^[1-9][0-9]{0,15}$/.test(user) || !Number.isSafeInteger(Number(user)))
    throw new UsageError('--user must be a positive integer up to 9007199254740991');
  const key = loadDevKey(env.initDataDevKeyFile, false);
  if (key === null)
    throw new UsageError(
      `no development key in ${env.initDataDevKeyFile}: the service makes it when it runs with the embedded database (make run), or set INITDATA_DEV_KEY_FILE for both`,
    );
  const bot = await request(env, token, { method: 'GET', path: `/admin/bots/${encodeURIComponent(botId)}` });
  if (!bot.ok) {
    process.stderr.write(`${JSON.stringify(bot.body ?? { status: bot.status }, null, 2)}\n`);
    return 1;
  }
  const messengerBotId = (bot.body as { messengerBotId?: string | null }).messengerBotId;
  if (messengerBotId === null || messengerBotId === undefined) {
    process.stderr.write(
      `bot ${botId} has no messenger bot id: npm run admin -- bot update ${botId} --messenger-bot-id <n>\n`,
    );
    return 1;
  }
  const startParam = flags.get('start-param');
  const signed = signInitData(key.privateKey, {
    messengerBotId: String(messengerBotId),
    userId: user,
    ...(startParam === undefined ? {} : { startParam }),
  });
  process.stdout.write(`${signed}\n`);
  return 0;
}

/** `user export`: the NDJSON passed through as it arrives, never held whole. */
async function exportUser(env: CliEnv, token: string, r: { method: string; path: string }): Promise<number> {
  const base = serviceUrl(env);
  let res: Response;
  try {
    res = await fetch(`${base}${r.path}`, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    throw new Unreachable(`cannot reach the service at ${base}: ${(err as Error).message}`);
  }
  if (!res.ok || res.body === null) {
    process.stderr.write(`${await res.text()}\n`);
    return 1;
  }
  for await (const chunk of res.body) if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
  return 0;
}

/** `backup <dir>` of the running embedded database; `restore <dir>` into a DATA_DIR without one. */
async function backupOrRestore(env: CliEnv, argv: string[]): Promise<number> {
  const dir = need(argv[1], 'the backup directory');
  if (argv.length > 2) throw new UsageError(`${argv[0]} takes one directory`);
  if (env.databaseUrl !== null)
    throw new UsageError(
      `${argv[0]} is for the embedded database; with DATABASE_URL, back up your PostgreSQL with its own tools (pg_basebackup, pg_dump)`,
    );
  // `npm run` starts in the package's folder, not where the operator typed the command: a relative path would
  // depend on how the CLI was started.
  if (!isAbsolute(dir)) throw new UsageError(`${argv[0]} takes an absolute path (${dir} is relative)`);
  const path = resolve(dir);
  try {
    if (argv[0] === 'backup') {
      const manifest = await backup(env.dataDir, path);
      process.stdout.write(`${JSON.stringify({ backup: path, ...manifest }, null, 2)}\n`);
      return 0;
    }
    // Held while it copies: no service may start on a half-restored DATA_DIR.
    const lock = lockDataDir(env.dataDir);
    try {
      const manifest = restore(path, env.dataDir);
      process.stdout.write(`${JSON.stringify({ restoredInto: resolve(env.dataDir), ...manifest }, null, 2)}\n`);
    } finally {
      lock.release();
    }
    return 0;
  } catch (err) {
    // A backup or restore that fails says why in a line, whatever failed (a full disk, a refused connection).
    const known = err instanceof BackupError || err instanceof DataDirInUse;
    process.stderr.write(`${argv[0]} failed: ${known ? err.message : String((err as Error).message ?? err)}\n`);
    return 1;
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const env = readCliEnv();
  const table = argv.includes('--table');
  try {
    if (argv[0] === 'db' && argv.length === 1) {
      process.stdout.write(`${databaseUrl(env)}\n`);
      return 0;
    }
    if (argv[0] === 'backup' || argv[0] === 'restore') return await backupOrRestore(env, argv);
    if (argv[0] === 'initdata') return await initData(env, adminToken(env), argv);
    if (argv[0] === 'user' && argv[1] === 'export') return await exportUser(env, adminToken(env), plan(argv));
    const r = plan(argv);
    const res = await request(env, adminToken(env), r);
    const out = res.body ?? { status: res.status };
    (res.ok ? process.stdout : process.stderr).write(
      table && res.ok ? renderTable(out) : `${JSON.stringify(out, null, 2)}\n`,
    );
    return res.ok ? 0 : 1;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof Unreachable) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
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
