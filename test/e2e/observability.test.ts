// Metrics in Prometheus text, structured logs with request ids, rate-limit headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, postBotApi, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';

let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, { LOG_LEVEL: 'debug', RATE_LIMIT_BURST: '5', RATE_LIMIT_PER_MIN: '1' });
  p = await provision(srv.url);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const inner = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (want.every((w) => inner.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return Number.NaN;
}

describe('metrics', () => {
  it('counts requests, events by outcome, diagnostics, batches, commits, the pool, limits and caches', async () => {
    const second = (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`)).body.token as string;
    const dup = serverEvent();
    const pay = () => serverEvent({ eventOrigin: 'platform', propsString: { 'tg.telegram_payment_charge_id': 'm-1' } });
    await postBotApi(srv.url, p.token, {
      events: [dup, dup, serverEvent({ eventType: 'odd' }), serverEvent({ platformUserId: undefined }), pay()],
    });
    await postBotApi(srv.url, p.token, { events: [dup] });
    await postBotApi(srv.url, second, { events: [pay()] });
    for (let i = 0; i < 6; i++) await postBotApi(srv.url, second, { events: [serverEvent()] });

    const res = await admin(srv.url, 'GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const m = res.text;
    expect(metric(m, 'tg_ingest_http_requests_total', { endpoint: 'bot_api', status: '202' })).toBeGreaterThanOrEqual(
      7,
    );
    expect(metric(m, 'tg_ingest_http_requests_total', { endpoint: 'bot_api', status: '429' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(metric(m, 'tg_ingest_http_requests_total', { endpoint: 'admin', status: '201' })).toBeGreaterThanOrEqual(3);
    expect(metric(m, 'tg_ingest_events_total', { endpoint: 'bot_api', outcome: 'accepted' })).toBeGreaterThanOrEqual(9);
    expect(metric(m, 'tg_ingest_events_total', { endpoint: 'bot_api', outcome: 'rejected' })).toBe(1);
    expect(metric(m, 'tg_ingest_events_total', { endpoint: 'bot_api', outcome: 'duplicated' })).toBe(1);
    expect(metric(m, 'tg_ingest_events_total', { endpoint: 'bot_api', outcome: 'redelivered' })).toBe(1);
    expect(metric(m, 'tg_ingest_events_total', { endpoint: 'bot_api', outcome: 'stored_not_billed' })).toBe(1);
    expect(metric(m, 'tg_ingest_diagnostics_total', { code: 'event_type_unknown', severity: 'warning' })).toBe(1);
    expect(metric(m, 'tg_ingest_diagnostics_total', { code: 'event_missing_identity', severity: 'error' })).toBe(1);
    expect(metric(m, 'tg_ingest_batch_events_count', { endpoint: 'bot_api' })).toBeGreaterThanOrEqual(7);
    expect(metric(m, 'tg_ingest_commit_rows_count', { path: 'copy' })).toBeGreaterThanOrEqual(1);
    expect(metric(m, 'tg_ingest_commit_rows_count', { path: 'staging' })).toBeGreaterThanOrEqual(1);
    expect(metric(m, 'tg_ingest_commit_duration_seconds_count', { path: 'copy' })).toBeGreaterThanOrEqual(1);
    // A redelivery is counted as such, not as a database error.
    expect(metric(m, 'tg_ingest_commit_redeliveries_total')).toBeGreaterThanOrEqual(1);
    expect(m).not.toContain('tg_ingest_db_errors_total{kind="conflict"}');
    expect(metric(m, 'tg_ingest_rate_limited_total', { endpoint: 'bot_api' })).toBeGreaterThanOrEqual(1);
    expect(metric(m, 'tg_ingest_pool_queue_size')).toBe(0);
    expect(metric(m, 'tg_ingest_pool_utilization')).toBeGreaterThanOrEqual(0);
    expect(metric(m, 'tg_ingest_writer_pending_requests')).toBe(0);
    expect(metric(m, 'tg_ingest_cache_requests_total', { cache: 'token', result: 'hit' })).toBeGreaterThanOrEqual(5);
    expect(metric(m, 'tg_ingest_cache_requests_total', { cache: 'token', result: 'miss' })).toBeGreaterThanOrEqual(2);
    expect(m).toContain('# TYPE tg_ingest_cache_requests_total counter');
    // Every counter is named _total; process and Node.js metrics carry their standard names.
    for (const [, name] of m.matchAll(/^# TYPE (\S+) counter$/gm)) expect(name).toMatch(/_total$/);
    expect(metric(m, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(metric(m, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(m).toContain('nodejs_eventloop_lag_seconds');
    // A second scrape reports the same cumulative counts (the cache counter is not double-counted).
    const again = (await admin(srv.url, 'GET', '/metrics')).text;
    expect(metric(again, 'tg_ingest_cache_requests_total', { cache: 'token', result: 'miss' })).toBe(
      metric(m, 'tg_ingest_cache_requests_total', { cache: 'token', result: 'miss' }),
    );
  });
});

describe('logs and request ids', () => {
  it('echo a request id in X-Request-Id and log it, as JSON, at the configured level', async () => {
    const r = await postBotApi(srv.url, p.token, { events: [serverEvent()] });
    const id = r.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    for (let i = 0; i < 100 && !srv.logs.some((l) => l.requestId === id); i++)
      await new Promise((res) => setTimeout(res, 50));
    const line = srv.logs.find((l) => l.requestId === id);
    expect(line).toMatchObject({ level: 20, path: '/tg', status: expect.any(Number), service: 'tg-ingest' });
    expect(typeof line!.time).toBe('string');

    const quiet = await startServer(db.url, { LOG_LEVEL: 'warn' });
    try {
      await call(`${quiet.url}/healthz`);
      await new Promise((res) => setTimeout(res, 100));
      expect(quiet.logs.filter((l) => Number(l.level) < 40)).toEqual([]);
    } finally {
      await quiet.stop();
    }
  });
});

describe('rate-limit headers', () => {
  it('come with every bot_api answer once the token is known, refusals included, and with none before', async () => {
    const own = await provision(srv.url);
    const ok = await postBotApi(srv.url, own.token, { events: [serverEvent()] });
    expect([ok.headers.get('ratelimit-limit'), ok.headers.get('ratelimit-remaining')]).toEqual(['5', '4']);
    expect(Number(ok.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    const bad = await postBotApi(srv.url, own.token, 'nope');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('ratelimit-remaining')).toBe('3');
    const anonymous = await postBotApi(srv.url, null, { events: [serverEvent()] });
    expect(anonymous.status).toBe(401);
    // No bucket was touched: no figures of one.
    expect(anonymous.headers.get('ratelimit-limit')).toBeNull();
    const unknown = await postBotApi(srv.url, `tgk_${'A'.repeat(43)}`, { events: [serverEvent()] });
    expect([unknown.status, unknown.headers.get('ratelimit-remaining')]).toEqual([401, null]);
    for (let i = 0; i < 3; i++) await postBotApi(srv.url, own.token, { events: [serverEvent()] });
    const limited = await postBotApi(srv.url, own.token, { events: [serverEvent()] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
