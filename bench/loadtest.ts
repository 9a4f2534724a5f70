// `npm run loadtest`: autocannon against a running service, in one command. It provisions a throw-away project, bot
// and token (the token's bucket raised), sends 10-event batches (--batch) with fresh eventIds, on webapp with initData
// signed by the development key (which only a local service trusts), prints what it got, and removes what it made.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadDevKey, signInitData } from '../src/auth/dev-key.js';
import { readCliEnv, readConfig } from '../src/config/config.js';
import { readRuntime } from '../src/config/data-dir.js';
import { adminTokenPath } from '../src/admin/admin-token.js';
import { TOKEN_LIMIT_MAX } from '../src/limits/token-bucket.js';
import { MAX_ERASURE_USERS } from '../src/privacy/store.js';
import { load } from './lib/load.js';
import { event, runTail, serverBatch, stamp, type Template, template } from './lib/payloads.js';

const USAGE = `npm run loadtest -- [--connections 100] [--duration 30] [--batch 10] [--endpoint bot_api|webapp]
                        [--users <n>] [--url <service>] [--keep]

Drives a running service with autocannon (closed loop: each connection sends its next request once the last is
answered), on a project, bot and token of its own, which it removes afterwards (--keep leaves them). Every request
carries new eventIds, as real traffic does: a fixed body would be redelivered, not stored.

  --connections   autocannon's connections (1–10000)
  --duration      seconds (1–3600)
  --batch         events per request (1–1000)
  --endpoint      bot_api (POST /tg, X-API-Key) or webapp (POST /tg/webapp, signed initData)
  --users         webapp: users the requests take turns as (default: as many as connections, more where the
                  service's default per-user bucket, 120 a minute with a burst of 300, would bind over the duration)
  --url           the service (default: the one running from DATA_DIR, where it notes its address)

environment: ADMIN_URL, ADMIN_TOKEN, DATA_DIR, INITDATA_DEV_KEY_FILE, as for npm run admin`;

class UsageError extends Error {}

function integer(v: string | undefined, name: string, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min || n > max)
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

interface Admin {
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
}

function adminClient(base: string, token: string): Admin {
  return {
    async call<T>(method: string, path: string, body?: unknown): Promise<T> {
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        throw new Error(`cannot reach the admin API at ${base}: ${(err as Error).message}`);
      }
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
      return (text === '' ? {} : JSON.parse(text)) as T;
    },
  };
}

/** The service's per-user bucket unless its operator changed it (RATE_LIMIT_BURST, RATE_LIMIT_PER_MIN): assumed. */
const DEFAULT_BUCKET = readConfig({});

/** Users of a webapp run: enough that the default per-user bucket never binds. */
function webappUsers(connections: number, durationS: number): number {
  // At up to 20,000 requests a second, each user's share over the run within its burst and refill.
  const perUser = DEFAULT_BUCKET.rateLimitBurst + (DEFAULT_BUCKET.rateLimitPerMin * durationS) / 60;
  return Math.max(connections, Math.ceil((20_000 * durationS) / perUser));
}

const plural = (n: number, one: string) => `${n.toLocaleString('en-US')} ${one}${n === 1 ? '' : 's'}`;

async function main(): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        connections: { type: 'string' },
        duration: { type: 'string' },
        batch: { type: 'string' },
        endpoint: { type: 'string' },
        users: { type: 'string' },
        url: { type: 'string' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let o: { connections: number; durationS: number; batch: number; endpoint: 'bot_api' | 'webapp'; users: number };
  try {
    const endpoint = (values.endpoint as string | undefined) ?? 'bot_api';
    if (endpoint !== 'bot_api' && endpoint !== 'webapp') throw new UsageError('--endpoint is bot_api or webapp');
    const connections = integer(values.connections as string | undefined, 'connections', 100, 1, 10_000);
    const durationS = integer(values.duration as string | undefined, 'duration', 30, 1, 3600);
    o = {
      connections,
      durationS,
      batch: integer(values.batch as string | undefined, 'batch', 10, 1, 1000),
      endpoint,
      users: integer(values.users as string | undefined, 'users', webappUsers(connections, durationS), 1, 100_000),
    };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n\n${USAGE}\n`);
    return 2;
  }

  const env = readCliEnv();
  const runtime = readRuntime(env.dataDir);
  const url = ((values.url as string | undefined) ?? runtime?.url ?? env.adminUrl ?? runtime?.adminUrl)?.replace(
    /\/+$/,
    '',
  );
  if (url === undefined) {
    process.stderr.write(
      `no running service found in ${env.dataDir} (start it with make run, or set DATA_DIR), and no --url\n`,
    );
    return 2;
  }
  // Another service's admin API takes its own token, never the local one from DATA_DIR.
  const remote = values.url !== undefined;
  const adminUrl = env.adminUrl ?? (remote ? url : (runtime?.adminUrl ?? url));
  let token = env.adminToken;
  if (token === null && remote) {
    process.stderr.write('with --url, set ADMIN_TOKEN (and ADMIN_URL when its admin API answers elsewhere)\n');
    return 2;
  }
  if (token === null) {
    try {
      token = readFileSync(adminTokenPath(env.dataDir), 'utf8').trim();
    } catch {
      process.stderr.write(`no ADMIN_TOKEN and no ${adminTokenPath(env.dataDir)}: set ADMIN_TOKEN\n`);
      return 2;
    }
  }
  const key = o.endpoint === 'webapp' ? loadDevKey(env.initDataDevKeyFile, false) : null;
  if (o.endpoint === 'webapp' && key === null) {
    process.stderr.write(
      `no development initData key in ${env.initDataDevKeyFile}: the webapp endpoint needs initData the service trusts; a local service (make run) makes that key, or set INITDATA_DEV_KEY_FILE to one it trusts\n`,
    );
    return 2;
  }
  const admin = adminClient(adminUrl, token);

  // What it makes, removed in `finally` however the run ends.
  const made: { projectId?: string; botId?: string; tokenId?: string } = {};
  const messengerBotId = String(9_000_000_000 + Math.floor(Math.random() * 999_999_999));
  const tail = runTail();
  const botUsers = 1000;
  let exit = 0;
  try {
    const stamp8 = new Date().toISOString().slice(0, 19);
    made.projectId = (
      await admin.call<{ projectId: string }>('POST', '/admin/projects', { name: `loadtest ${stamp8}` })
    ).projectId;
    made.botId = (
      await admin.call<{ botId: string }>('POST', '/admin/bots', {
        projectId: made.projectId,
        messengerBotId,
        name: 'loadtest',
      })
    ).botId;
    let templates: Template[];
    let headers: Record<string, string>;
    let path: string;
    if (o.endpoint === 'bot_api') {
      const issued = await admin.call<{ tokenId: string; token: string }>('POST', `/admin/bots/${made.botId}/tokens`);
      made.tokenId = issued.tokenId;
      // Its own bucket, as large as a token's may be: the service's defaults stay as they are for every other token.
      await admin.call('PATCH', `/admin/tokens/${issued.tokenId}`, {
        rateLimitPerMin: TOKEN_LIMIT_MAX.maxPerMin,
        rateLimitBurst: TOKEN_LIMIT_MAX.maxBurst,
      });
      templates = Array.from({ length: 8 }, (_, k) => serverBatch(o.batch, { tail, users: botUsers }, k * o.batch));
      headers = { 'content-type': 'application/json', 'x-api-key': issued.token };
      path = '/tg';
    } else {
      templates = Array.from({ length: o.users }, (_, u) =>
        template({
          botId: made.botId,
          auth: { initData: signInitData(key!.privateKey, { messengerBotId, userId: String(200_000_000 + u) }) },
          events: Array.from({ length: o.batch }, (_, i) => event(u * o.batch + i, { tail, users: 1, webapp: true })),
        }),
      );
      headers = { 'content-type': 'application/json' };
      path = '/tg/webapp';
    }
    let counter = 0;
    const body = () => stamp(templates[counter % templates.length]!, counter++);
    process.stderr.write(
      `loadtest: ${url}${path}, ${plural(o.connections, 'connection')}, ${o.durationS} s, ${plural(o.batch, 'event')} a request${o.endpoint === 'webapp' ? `, ${plural(o.users, 'user')}` : ''}, project ${made.projectId}\n`,
    );
    // Ctrl-C ends the run early; what it made is removed all the same.
    const interrupted = new AbortController();
    const onSignal = () => {
      process.stderr.write('loadtest: stopping, then removing what it made…\n');
      interrupted.abort();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const r = await load({
      url: `${url}${path}`,
      headers,
      connections: o.connections,
      durationS: o.durationS,
      body,
      signal: interrupted.signal,
    });
    // Requests still in flight when autocannon stopped are committed after it: read once the count holds still.
    const stored = async () =>
      Number(
        (await admin.call<{ eventsStored: number }>('GET', `/admin/projects/${made.projectId}/usage`)).eventsStored,
      );
    let eventsStored = await stored();
    for (let i = 0; i < 20; i++) {
      await new Promise((res) => setTimeout(res, 250));
      const now = await stored();
      if (now === eventsStored) break;
      eventsStored = now;
    }
    const statuses = Object.entries(r.statuses)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([s, n]) => `${s}: ${n.toLocaleString('en-US')}`)
      .join(', ');
    const lines = [
      `events/s     ${Math.round(r.rps * o.batch).toLocaleString('en-US')} (accepted: 202)`,
      `requests/s   ${Math.round(r.rps).toLocaleString('en-US')} answered 202, over ${r.seconds.toFixed(1)} s`,
      `latency      p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms (all answers)`,
      `statuses     ${statuses || 'none'}${r.errors > 0 ? `; ${r.errors} connection errors` : ''}${r.timeouts > 0 ? `; ${r.timeouts} timeouts` : ''}`,
      `stored       ${eventsStored.toLocaleString('en-US')} events (202s counted × batch: ${(r.ok * o.batch).toLocaleString('en-US')}; the answers to requests in flight at the end are not counted, their events are stored)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (r.non2xx > 0) {
      const hints: string[] = [];
      if (r.statuses['429'] !== undefined)
        hints.push(
          o.endpoint === 'webapp'
            ? "429: a user's bucket (RATE_LIMIT_PER_MIN, RATE_LIMIT_BURST) bound; give --users more"
            : "429: the token's bucket bound",
        );
      if (r.statuses['503'] !== undefined)
        hints.push('503: the service refused work it could not hold (docs/operations.md#overload)');
      if (hints.length > 0) process.stdout.write(`note         ${hints.join('; ')}\n`);
    }
  } catch (err) {
    process.stderr.write(`loadtest: ${(err as Error).message}\n`);
    exit = 1;
  } finally {
    if (values.keep !== true) exit = Math.max(exit, await remove(admin, made, o, botUsers));
  }
  return exit;
}

/**
 * Removes the run's events and everything known of its users (an erasure of every user it sent as, which the service
 * runs in the background), revokes its token and unlinks its bot. The admin API deletes no project or bot: those two
 * records stay, empty and switched off, under the name "loadtest <time>".
 */
async function remove(
  admin: Admin,
  made: { projectId?: string; botId?: string; tokenId?: string },
  o: { endpoint: 'bot_api' | 'webapp'; users: number },
  botUsers: number,
): Promise<number> {
  try {
    if (made.tokenId !== undefined) await admin.call('DELETE', `/admin/tokens/${made.tokenId}`);
    if (made.botId !== undefined)
      await admin.call('PATCH', `/admin/bots/${made.botId}`, { apiIngest: false, miniAppIngest: false });
    if (made.projectId === undefined) return 0;
    const first = o.endpoint === 'bot_api' ? 100_000_000 : 200_000_000;
    const count = o.endpoint === 'bot_api' ? botUsers : o.users;
    const erasures: string[] = [];
    for (let from = 0; from < count; from += MAX_ERASURE_USERS) {
      const userIds = Array.from({ length: Math.min(MAX_ERASURE_USERS, count - from) }, (_, i) =>
        String(first + from + i),
      );
      erasures.push(
        (await admin.call<{ erasureId: string }>('POST', `/admin/projects/${made.projectId}/erasures`, { userIds }))
          .erasureId,
      );
    }
    process.stderr.write(`removing: erasing the run's events (${plural(erasures.length, 'erasure')})…\n`);
    const deadline = Date.now() + 15 * 60_000;
    let deleted = 0;
    for (const id of erasures) {
      for (;;) {
        const e = await admin.call<{ status: string; deleted: { events: number }; error?: string }>(
          'GET',
          `/admin/projects/${made.projectId}/erasures/${id}`,
        );
        if (e.status === 'done') {
          deleted += e.deleted.events;
          break;
        }
        if (e.status === 'failed') throw new Error(`erasure ${id} failed: ${e.error ?? ''}`);
        if (Date.now() > deadline) {
          process.stderr.write(`removing: erasure ${id} still ${e.status}; the service finishes it on its own\n`);
          return 1;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    if (made.botId !== undefined) await admin.call('PATCH', `/admin/bots/${made.botId}`, { projectId: null });
    process.stdout.write(
      `removed      ${deleted.toLocaleString('en-US')} events and the run's users; token revoked, bot unlinked (project ${made.projectId} stays, empty)\n`,
    );
    return 0;
  } catch (err) {
    process.stderr.write(`removing: ${(err as Error).message}\n`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
