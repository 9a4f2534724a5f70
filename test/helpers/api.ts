// Calls over real HTTP, builders for valid payloads, and a probe of the event loop from outside.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { ADMIN_TOKEN } from './server.js';

export interface Res<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function call<T = any>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Res<T>> {
  const { method = 'GET', headers = {}, body } = init;
  const payload =
    body === undefined
      ? undefined
      : typeof body === 'string' || body instanceof Uint8Array
        ? body
        : JSON.stringify(body);
  const hasType = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type');
  const res = await fetch(url, {
    method,
    headers: payload !== undefined && !hasType ? { 'content-type': 'application/json', ...headers } : headers,
    body: payload as string | Uint8Array | undefined,
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export function admin<T = any>(base: string, method: string, path: string, body?: unknown): Promise<Res<T>> {
  return call<T>(`${base}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
}

export interface Provisioned {
  projectId: string;
  botId: string;
  messengerBotId: number;
  token: string;
  tokenId: string;
}

let nextMessengerBotId = 7_000_000_000 + Math.floor(Math.random() * 1_000_000_000);

export async function provision(
  base: string,
  opts: { eventAllowance?: number | null; messengerBotId?: number } = {},
): Promise<Provisioned> {
  const p = await admin(base, 'POST', '/admin/projects', {
    name: 'test project',
    eventAllowance: opts.eventAllowance ?? null,
  });
  if (p.status !== 201) throw new Error(`create project: ${p.status} ${p.text}`);
  const messengerBotId = opts.messengerBotId ?? nextMessengerBotId++;
  const b = await admin(base, 'POST', '/admin/bots', { projectId: p.body.projectId, messengerBotId });
  if (b.status !== 201) throw new Error(`create bot: ${b.status} ${b.text}`);
  const t = await admin(base, 'POST', `/admin/bots/${b.body.botId}/tokens`);
  if (t.status !== 201) throw new Error(`create token: ${t.status} ${t.text}`);
  return {
    projectId: p.body.projectId,
    botId: b.body.botId,
    messengerBotId,
    token: t.body.token,
    tokenId: t.body.tokenId,
  };
}

export function postBotApi<T = any>(
  base: string,
  token: string | null,
  body: unknown,
  headers: Record<string, string> = {},
  path = '/tg',
): Promise<Res<T>> {
  return call<T>(`${base}${path}`, {
    method: 'POST',
    headers: token === null ? headers : { 'x-api-key': token, ...headers },
    body,
  });
}

export function serverEvent(over: Record<string, unknown> = {}): Record<string, any> {
  return {
    eventId: randomUUID(),
    eventName: 'message_received',
    eventDate: '2026-11-22T10:00:00Z',
    eventType: 'message',
    eventOrigin: 'custom',
    platformUserId: '1001',
    ...over,
  };
}

/** /healthz polled every 10 ms while `work` runs: its 95th percentile and slowest answers. */
export async function slowestHealthz(
  base: string,
  work: Promise<unknown>,
): Promise<{ p95: number; worst: number; probes: number }> {
  let done = false;
  // Its failure is reported by the await below.
  work.finally(() => (done = true)).catch(() => undefined);
  const latencies: number[] = [];
  while (!done) {
    const started = performance.now();
    expect((await call(`${base}/healthz`)).status).toBe(200);
    latencies.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 10));
  }
  await work;
  latencies.sort((a, b) => a - b);
  return {
    p95: latencies[Math.floor(latencies.length * 0.95)]!,
    worst: latencies.at(-1)!,
    probes: latencies.length,
  };
}

/**
 * The report aggregator's memory of filed users, from /metrics: users of a window counted without a probe (hits) and
 * with one (misses).
 */
export async function filedUsers(base: string): Promise<{ hits: number; misses: number }> {
  const text = (await admin(base, 'GET', '/metrics')).text;
  const count = (result: string) =>
    Number(
      new RegExp(`^tg_ingest_cache_requests_total\\{cache="filed_users",result="${result}"\\} (\\d+)`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  return { hits: count('hit'), misses: count('miss') };
}

/** Asks for an erasure of the users and waits until it is done. */
export async function eraseAndWait(base: string, projectId: string, userIds: string[]): Promise<void> {
  const r = await admin(base, 'POST', `/admin/projects/${projectId}/erasures`, { userIds });
  expect(r.status).toBe(202);
  const status = async () =>
    (await admin(base, 'GET', `/admin/projects/${projectId}/erasures/${r.body.erasureId}`)).body.status;
  await expect.poll(status, { timeout: 30_000 }).toBe('done');
}
