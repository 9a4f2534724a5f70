// Credential floods cost almost nothing and evict nothing: keys of the wrong shape never reach the
// database, unknown keys and bot ids are remembered apart from known ones, and failed
// authentications, whether they cost a lookup or not, are limited per client address (and, for
// initData, per bot), while every answer before the budget is spent stays what it was and cached
// credentials are always served.
import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, loadTokenTags, type TokenTags } from '../../src/auth/api-tokens.js';
import { admin, call, type Res, provision, type Provisioned, serverEvent } from '../helpers/api.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { makeInitData, newSigner } from '../helpers/initdata.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const signer = newSigner();
const forger = newSigner();
let db: TestDatabase;
let srv: RunningServer;
let p: Provisioned;
let tags: TokenTags;

beforeAll(async () => {
  db = await createTestDatabase();
  srv = await startServer(db.url, {
    INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
    TRUST_PROXY: '1',
    AUTH_CACHE_TTL_MS: '60000',
    AUTH_CACHE_MAX_ENTRIES: '2',
    AUTH_FAILURE_BURST: '5',
    AUTH_FAILURE_REFILL_PER_S: '0.001',
    // Longer than the default second: the valid request that overtakes a held refusal has that long on a busy machine.
    AUTH_RATE_LIMITED_DELAY_MS: '2000',
    INITDATA_FAILURE_BURST_PER_BOT: '8',
    INITDATA_FAILURE_REFILL_PER_S_PER_BOT: '0.001',
    RATE_LIMIT_BURST: '100000',
  });
  p = await provision(srv.url);
  tags = await loadTokenTags(db.sql);
});
afterAll(async () => {
  await srv?.stop();
  await db?.drop();
});

let nextAddress = 1;
/** A client address of its own, as the trusted proxy forwards it. */
const address = () => `10.${(nextAddress >> 16) & 255}.${(nextAddress >> 8) & 255}.${nextAddress++ & 255}`;
/** A key this deployment could have issued (its tag is right) but did not: each costs a lookup. */
const unknownToken = () => tags.issue();
/** A key of the right shape without the deployment's tag: refused from memory. */
const madeUpToken = () => `tgk_${randomBytes(32).toString('base64url')}`;
const postBotApi = (token: string, from: string): Promise<Res> =>
  call(`${srv.url}/tg`, {
    method: 'POST',
    headers: { 'x-api-key': token, 'x-forwarded-for': `203.0.113.9, ${from}` },
    body: { events: [serverEvent()] },
  });
const postWebapp = (botId: string, initData: string, from: string): Promise<Res> =>
  call(`${srv.url}/tg/webapp`, {
    method: 'POST',
    headers: { 'x-forwarded-for': from },
    body: {
      botId,
      auth: { initData },
      events: [
        { eventId: randomUUID(), eventName: 'open', eventDate: '2026-11-22T10:00:00Z', eventType: 'interaction' },
      ],
    },
  });

/** While the token table is away, anything that still answers did not ask the database. */
async function withoutTokenTable<T>(fn: () => Promise<T>): Promise<T> {
  await db.sql`ALTER TABLE api_tokens RENAME TO api_tokens_away`;
  try {
    return await fn();
  } finally {
    await db.sql`ALTER TABLE api_tokens_away RENAME TO api_tokens`;
  }
}

describe('bot_api keys', () => {
  it('refuses a key of the wrong shape without a query, and remembers an unknown one without another', async () => {
    const unknown = unknownToken();
    expect((await postBotApi(unknown, address())).status).toBe(401);
    await withoutTokenTable(async () => {
      for (const bad of [
        'tgk_short',
        `tgk_${'a'.repeat(44)}`,
        'Bearer xyz',
        `tgk_${randomBytes(32).toString('base64')}`,
        madeUpToken(),
      ]) {
        const r = await postBotApi(bad, address());
        expect([r.status, r.body.error]).toEqual([401, 'api_key_invalid']);
      }
      const again = await postBotApi(unknown, address());
      expect([again.status, again.body.error]).toEqual([401, 'api_key_invalid']);
      // A key that has to be looked up cannot be while the table is away: proof that the others were not.
      const fresh = await postBotApi(unknownToken(), address());
      expect([fresh.status, fresh.body.error]).toEqual([503, 'unavailable']);
    });
  });

  it('a flood of unknown keys evicts no known one', async () => {
    expect((await postBotApi(p.token, address())).status).toBe(202);
    // The cache of known credentials holds 2 here; 40 unknown keys pass through their own.
    for (let i = 0; i < 40; i++) expect((await postBotApi(unknownToken(), address())).status).toBe(401);
    await withoutTokenTable(async () => {
      expect((await postBotApi(p.token, address())).status).toBe(202);
    });
  });

  it('limits failed lookups per client address; until then every answer is a 401, and a known key is always served', async () => {
    const from = address();
    for (let i = 0; i < 5; i++) expect((await postBotApi(unknownToken(), from)).status).toBe(401);
    const limited = await postBotApi(unknownToken(), from);
    expect([limited.status, limited.body.error]).toEqual([429, 'auth_rate_limited']);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A known key is always served; a refusal that costs nothing is now a 429 as well.
    expect((await postBotApi(p.token, from)).status).toBe(202);
    expect((await postBotApi('tgk_short', from)).body.error).toBe('auth_rate_limited');
    // Another address has a budget of its own.
    expect((await postBotApi(unknownToken(), address())).status).toBe(401);
    const m = (await admin(srv.url, 'GET', '/metrics')).text;
    expect(m).toMatch(/tg_ingest_auth_rate_limited_total\{endpoint="bot_api"\} [1-9]/);
  });

  it('counts an IPv6 client by its address, and its /64 as eight addresses together', async () => {
    const prefix = `2001:db8:${(nextAddress++).toString(16)}:1`;
    // Its own budget of 5, as an IPv4 address has.
    for (let i = 0; i < 5; i++) expect((await postBotApi(madeUpToken(), `${prefix}::1`)).status).toBe(401);
    expect((await postBotApi(madeUpToken(), `${prefix}::1`)).body.error).toBe('auth_rate_limited');
    // A neighbour in the same /64 keeps a budget of its own...
    expect((await postBotApi(madeUpToken(), `${prefix}::2`)).status).toBe(401);
    // ...until the /64 as a whole has failed 8 × 5 times: a fresh address of it then starts spent.
    for (let i = 0; i < 34; i++)
      expect((await postBotApi(madeUpToken(), `${prefix}:${Math.floor(i / 4) + 1}::${(i % 4) + 3}`)).status).toBe(401);
    const spent = await postBotApi(madeUpToken(), `${prefix}:ffff:ffff:ffff:ffff`);
    expect([spent.status, spent.body.error]).toEqual([429, 'auth_rate_limited']);
    // The next /64 is another client; an IPv4 client written as IPv6 is that IPv4 client.
    expect((await postBotApi(madeUpToken(), `${prefix.slice(0, -1)}2::1`)).status).toBe(401);
    const v4 = address();
    for (let i = 0; i < 5; i++) expect((await postBotApi(madeUpToken(), v4)).status).toBe(401);
    expect((await postBotApi(madeUpToken(), `::ffff:${v4}`)).body.error).toBe('auth_rate_limited');
  });

  it('counts keys refused from memory like failed lookups: wrong shape, without the tag, missing, and an unknown key already looked up', async () => {
    const from = address();
    const unknown = unknownToken();
    const refusals = [
      await postBotApi(unknown, from),
      await postBotApi(unknown, from),
      await postBotApi(madeUpToken(), from),
      await postBotApi('Bearer xyz', from),
      await call(`${srv.url}/tg`, {
        method: 'POST',
        headers: { 'x-forwarded-for': from },
        body: { events: [serverEvent()] },
      }),
    ];
    expect(refusals.map((r) => [r.status, r.body.error])).toEqual([
      [401, 'api_key_invalid'],
      [401, 'api_key_invalid'],
      [401, 'api_key_invalid'],
      [401, 'api_key_invalid'],
      [401, 'api_key_missing'],
    ]);
    // The budget of 5 is spent by them, so a flood of garbage keys is slowed like one of unknown keys.
    const limited = await postBotApi(unknown, from);
    expect([limited.status, limited.body.error]).toEqual([429, 'auth_rate_limited']);
    expect((await postBotApi(p.token, from)).status).toBe(202);
  });

  it('holds the budget when unknown keys arrive all at once: 5 lookups at once, then one at a time for an eighth of the lane, and 429 or 503', async () => {
    const from = address();
    const scrape = async () => (await admin(srv.url, 'GET', '/metrics')).text;
    const lookups = (t: string) => metric(t, 'tg_ingest_cache_requests_total{cache="token",result="miss"}');
    const low = (t: string) => metric(t, 'tg_ingest_low_priority_lookups_total');
    const before = await scrape();
    // The lookups wait behind a lock held here, so the burst has all arrived before any ends: what the lane takes
    // is its per-address share (AUTH_LOW_PRIORITY_QUEUE 64 / 8), not whatever a busy machine lets through.
    const answers: Res[] = [];
    let burst: Promise<unknown>[] = [];
    await db.sql.begin(async (tx) => {
      await tx`LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE`;
      burst = Array.from({ length: 30 }, () => postBotApi(unknownToken(), from).then((r) => answers.push(r)));
      // Past the budget and the address's share of the lane: answered 503 at once, without a lookup.
      await expect.poll(() => answers.length, { timeout: 10_000 }).toBe(30 - 5 - 8);
      expect(answers.map((r) => `${r.status} ${r.body.error}`)).toEqual(Array(17).fill('503 overloaded'));
      // Nothing else ends while the lock is held.
      await new Promise((r) => setTimeout(r, 300));
      expect(answers).toHaveLength(17);
    });
    await Promise.all(burst);
    const rest = answers.slice(17).map((r) => `${r.status} ${r.body.error}`);
    expect(rest.filter((a) => a === '401 api_key_invalid')).toHaveLength(5);
    // Keys carrying the tag past the budget are still looked up, one at a time, and refused 429.
    expect(rest.filter((a) => a === '429 auth_rate_limited')).toHaveLength(8);
    const after = await scrape();
    expect(low(after) - low(before)).toBe(8);
    expect(lookups(after) - lookups(before)).toBe(5 + 8);
    // Lookups that found the key were refunded: a known key from a fresh address spends nothing.
    const other = address();
    for (let i = 0; i < 10; i++) expect((await postBotApi(p.token, other)).status).toBe(202);
    for (let i = 0; i < 5; i++) expect((await postBotApi(unknownToken(), other)).status).toBe(401);
  });

  it('serves a valid key never seen before from an address past its budget, whatever spent it', async () => {
    const from = address();
    // The budget spent on the other endpoint: unknown bot ids, as a flood of refused mini-app bodies spends it.
    for (let i = 0; i < 5; i++) expect((await postWebapp(randomUUID(), 'x', from)).status).toBe(401);
    expect((await postWebapp(randomUUID(), 'x', from)).body.error).toBe('auth_rate_limited');
    // A token issued a moment ago: no instance has it in memory, so it costs a lookup, made in the low-priority lane.
    const fresh = (await admin(srv.url, 'POST', `/admin/bots/${p.botId}/tokens`, {})).body.token as string;
    const first = await postBotApi(fresh, from);
    expect([first.status, first.body.error]).toEqual([202, undefined]);
    // Still past the budget: an unknown key carrying the tag is looked up too, and refused 429.
    expect((await postBotApi(unknownToken(), from)).body.error).toBe('auth_rate_limited');
  });

  it('answers a client past its budget late (AUTH_RATE_LIMITED_DELAY_MS), while its known key is served meanwhile', async () => {
    const from = address();
    for (let i = 0; i < 5; i++) expect((await postBotApi(unknownToken(), from)).status).toBe(401);
    const order: string[] = [];
    const started = Date.now();
    const refused = postBotApi(unknownToken(), from).then((r) => {
      order.push('429');
      return { r, ms: Date.now() - started };
    });
    // Held, not busy: the same address's valid request overtakes it.
    await new Promise((r) => setTimeout(r, 100));
    expect((await postBotApi(p.token, from)).status).toBe(202);
    order.push('202');
    const { r, ms } = await refused;
    expect([r.status, r.body.error, r.headers.get('retry-after') !== null]).toEqual([429, 'auth_rate_limited', true]);
    expect(order).toEqual(['202', '429']);
    // A lower bound only: the service cannot answer before the delay, however busy the machine.
    expect(ms).toBeGreaterThanOrEqual(1950);
  });

  it('serves a token issued before tags, and looks keys without the tag up only while such a token is live', async () => {
    const own = await createTestDatabase();
    let first: RunningServer | undefined;
    let second: RunningServer | undefined;
    try {
      first = await startServer(own.url);
      const q = await provision(first.url);
      await first.stop();
      // Issued by a version before tags: no tag, and the column's default says so.
      const legacy = madeUpToken();
      await own.sql`INSERT INTO api_tokens (bot_id, token_hash, hint) VALUES (${q.botId}, ${hashToken(legacy)}, ${legacy.slice(0, 8)})`;
      second = await startServer(own.url, { AUTH_CACHE_TTL_MS: '200' });
      const srv2 = second;
      const post = (token: string) =>
        call(`${srv2.url}/tg`, { method: 'POST', headers: { 'x-api-key': token }, body: { events: [serverEvent()] } });
      const lookups = async () =>
        metric(
          (await admin(srv2.url, 'GET', '/metrics')).text,
          'tg_ingest_cache_requests_total{cache="token",result="miss"}',
        );
      expect((await post(legacy)).status).toBe(202);
      let before = await lookups();
      expect((await post(madeUpToken())).status).toBe(401);
      expect((await lookups()) - before).toBe(1);
      // Once the last of them is revoked, within AUTH_CACHE_TTL_MS keys without the tag cost nothing.
      const [{ token_id }] = await own.sql<{ token_id: string }[]>`SELECT token_id FROM api_tokens WHERE NOT tagged`;
      expect((await admin(srv2.url, 'DELETE', `/admin/tokens/${token_id}`)).status).toBe(204);
      const deadline = Date.now() + 5000;
      let free = false;
      while (!free && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        before = await lookups();
        expect((await post(madeUpToken())).status).toBe(401);
        free = (await lookups()) === before;
      }
      expect(free).toBe(true);
      expect((await post(legacy)).status).toBe(401);
      // An issued token is served all along.
      expect((await post(q.token)).status).toBe(202);
    } finally {
      await second?.stop();
      await own.drop();
    }
  });

  it("charges forged initData its address's budget past the address's quarter of INITDATA_VERIFY_QUEUE too: 401s, then 429", async () => {
    // One worker (one check at a time) and a queue of 16 (which also bounds the bodies waiting to be read: the 12 sent
    // at once fit): four checks may wait from one address, the rest are checked in the low-priority lane.
    const own = await startServer(db.url, {
      INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
      TRUST_PROXY: '1',
      WORKERS: '1',
      INITDATA_VERIFY_QUEUE: '16',
      AUTH_FAILURE_BURST: '12',
      AUTH_FAILURE_REFILL_PER_S: '0.001',
      INITDATA_FAILURE_BURST_PER_BOT: '1000',
      RATE_LIMIT_BURST: '100000',
    });
    try {
      const q = await provision(own.url);
      const forged = () => makeInitData(forger, { messengerBotId: q.messengerBotId, user: { id: 4242 } });
      const post = (initData: string) =>
        call(`${own.url}/tg/webapp`, {
          method: 'POST',
          headers: { 'x-forwarded-for': '10.98.0.1' },
          body: {
            botId: q.botId,
            auth: { initData },
            events: [openEvent()],
          },
        });
      const answers = await Promise.all(Array.from({ length: 12 }, () => post(forged())));
      // Past the quarter they went to the low-priority lane, and were each a failure of the address all the same.
      expect(await poolTasks(own.url, 'verify_low_priority')).toBeGreaterThan(0);
      expect(answers.map((r) => r.body.error)).toEqual(Array.from({ length: 12 }, () => 'initdata_signature_invalid'));
      const spent = await post(forged());
      expect([spent.status, spent.body.error]).toEqual([429, 'auth_rate_limited']);
    } finally {
      await own.stop();
    }
  });

  it("opens one address's webapp envelopes past its quarter of INITDATA_VERIFY_QUEUE in the low-priority lane, and answers them", async () => {
    // One worker (one envelope at a time) and a queue of 16: four envelopes may wait from one address.
    const own = await startServer(db.url, {
      INITDATA_PUBLIC_KEYS: signer.publicKeyHex,
      TRUST_PROXY: '1',
      WORKERS: '1',
      INITDATA_VERIFY_QUEUE: '16',
      RATE_LIMIT_BURST: '100000',
    });
    try {
      const q = await provision(own.url);
      const initData = makeInitData(signer, { messengerBotId: q.messengerBotId, user: { id: 4343 } });
      // Compressed, so each envelope is opened by the worker, never inline.
      const post = () =>
        call(`${own.url}/tg/webapp`, {
          method: 'POST',
          headers: { 'x-forwarded-for': '10.97.0.1', 'content-encoding': 'gzip', 'content-type': 'text/plain' },
          body: gzipSync(
            JSON.stringify({
              botId: q.botId,
              auth: { initData },
              events: [openEvent()],
            }),
          ),
        });
      const answers = await Promise.all(Array.from({ length: 12 }, () => post()));
      expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 202));
      expect(await poolTasks(own.url, 'webapp_open_low_priority')).toBeGreaterThan(0);
    } finally {
      await own.stop();
    }
  });

  it('holds at most AUTH_RATE_LIMITED_HELD_MAX answers, and sends the held ones when it shuts down', async () => {
    const held = await startServer(db.url, {
      TRUST_PROXY: '1',
      AUTH_FAILURE_BURST: '1',
      AUTH_FAILURE_REFILL_PER_S: '0.001',
      AUTH_RATE_LIMITED_DELAY_MS: '10000',
      AUTH_RATE_LIMITED_HELD_MAX: '1',
    });
    let stopped = false;
    try {
      const post = () =>
        call(`${held.url}/tg`, {
          method: 'POST',
          headers: { 'x-api-key': unknownToken(), 'x-forwarded-for': '10.99.0.1' },
          body: { events: [serverEvent()] },
        });
      expect((await post()).status).toBe(401);
      const answered: Res[] = [];
      const three = Array.from({ length: 3 }, () => post().then((r) => answered.push(r)));
      // Two are answered long before the 10 s delay; one stays held.
      while (answered.length < 2) await new Promise((r) => setTimeout(r, 50));
      expect(metric((await admin(held.url, 'GET', '/metrics')).text, 'tg_ingest_held_answers')).toBe(1);
      expect(answered).toHaveLength(2);
      await held.stop();
      stopped = true;
      await Promise.all(three);
      expect(answered.map((r) => [r.status, r.body.error])).toEqual(
        Array.from({ length: 3 }, () => [429, 'auth_rate_limited']),
      );
    } finally {
      if (!stopped) await held.stop();
    }
  });
});

/** A counter's value in Prometheus text (0 when absent). */
/** A webapp event for the two low-priority-lane tests. */
const openEvent = () => ({
  eventId: randomUUID(),
  eventName: 'open',
  eventDate: '2026-11-22T10:00:00Z',
  eventType: 'interaction',
});

/** Tasks of `kind` the worker pool ran, from the service's metrics. */
async function poolTasks(url: string, kind: string): Promise<number> {
  return metric(
    (await admin(url, 'GET', '/metrics')).text,
    `tg_ingest_pipeline_tasks_total{kind="${kind}",where="pool"}`,
  );
}

function metric(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('webapp bot ids and initData', () => {
  it('limits unknown bot ids per client address', async () => {
    const from = address();
    const initData = makeInitData(signer, { messengerBotId: p.messengerBotId });
    expect((await postWebapp(p.botId, initData, address())).status).toBe(202);
    for (let i = 0; i < 5; i++) expect((await postWebapp(randomUUID(), initData, from)).body.error).toBe('bot_unknown');
    expect((await postWebapp(randomUUID(), initData, from)).body.error).toBe('auth_rate_limited');
    // A known bot with a session verified before costs nothing: served.
    expect((await postWebapp(p.botId, initData, from)).status).toBe(202);
  });

  it('counts an unknown bot id already looked up, and a missing initData, like any failed authentication', async () => {
    const from = address();
    const unknownBot = randomUUID();
    const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: 9191 } });
    for (let i = 0; i < 3; i++) expect((await postWebapp(unknownBot, initData, from)).body.error).toBe('bot_unknown');
    for (let i = 0; i < 2; i++) expect((await postWebapp(p.botId, '', from)).body.error).toBe('initdata_empty');
    expect((await postWebapp(unknownBot, initData, from)).body.error).toBe('auth_rate_limited');
    expect((await postWebapp(p.botId, '', from)).body.error).toBe('auth_rate_limited');
  });

  it('limits forged initData per client address and per bot, and always serves a verified session', async () => {
    const own = await provision(srv.url);
    const user = { id: 5151, first_name: 'Real' };
    const verified = makeInitData(signer, { messengerBotId: own.messengerBotId, user });
    expect((await postWebapp(own.botId, verified, address())).status).toBe(202);
    const forged = () => makeInitData(forger, { messengerBotId: own.messengerBotId, user });

    const from = address();
    for (let i = 0; i < 5; i++)
      expect((await postWebapp(own.botId, forged(), from)).body.error).toBe('initdata_signature_invalid');
    const byAddress = await postWebapp(own.botId, forged(), from);
    expect([byAddress.status, byAddress.body.error]).toEqual([429, 'auth_rate_limited']);
    expect((await postWebapp(own.botId, verified, from)).status).toBe(202);

    // Three more failures from fresh addresses spend the bot's budget of 8.
    for (let i = 0; i < 3; i++)
      expect((await postWebapp(own.botId, forged(), address())).body.error).toBe('initdata_signature_invalid');
    const byBot = await postWebapp(own.botId, forged(), address());
    expect([byBot.status, byBot.body.error]).toEqual([429, 'auth_rate_limited']);
    // A session verified before is served from any address; one never seen is checked in the
    // low-priority lane past the budget, and served: no budget refuses a signature that verifies.
    expect((await postWebapp(own.botId, verified, address())).status).toBe(202);
    expect(
      (
        await postWebapp(
          own.botId,
          makeInitData(signer, { messengerBotId: own.messengerBotId, user: { id: 6262 } }),
          address(),
        )
      ).status,
    ).toBe(202);
    expect(
      (
        await postWebapp(
          own.botId,
          makeInitData(signer, { messengerBotId: own.messengerBotId, user: { id: 6363 } }),
          from,
        )
      ).status,
    ).toBe(202);
    // Other bots are untouched.
    const initData = makeInitData(signer, { messengerBotId: p.messengerBotId, user: { id: 7373 } });
    expect((await postWebapp(p.botId, initData, address())).status).toBe(202);
  });

  it('serves a hundred real users opening the mini-app at once from one address: the bot read once, every session checked at normal priority', async () => {
    const own = await provision(srv.url);
    const from = address();
    const scrape = async () => (await admin(srv.url, 'GET', '/metrics')).text;
    const low = (t: string) => metric(t, 'tg_ingest_pipeline_tasks_total{kind="verify_low_priority",where="pool"}');
    const before = await scrape();
    // A bot no instance has in memory, and a hundred sessions never seen: with an address budget of 5, waiting lookups
    // and checks charged as they wait (not as they run) sent all but five to 429 or the low-priority lane (64 held).
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        postWebapp(
          own.botId,
          makeInitData(signer, { messengerBotId: own.messengerBotId, user: { id: 30_000 + i } }),
          from,
        ),
      ),
    );
    expect(answers.map((r) => r.status).filter((st) => st !== 202)).toEqual([]);
    expect(low(await scrape()) - low(before)).toBe(0);
    // The address spent nothing: five unknown bot ids are still 401s.
    for (let i = 0; i < 5; i++) expect((await postWebapp(randomUUID(), 'x', from)).status).toBe(401);
  });

  it("holds the bot's budget when forged initData arrives all at once from many addresses: 8 checks, then the low-priority lane and 429", async () => {
    const own = await provision(srv.url);
    const user = { id: 8484, first_name: 'Real' };
    const scrape = async () => (await admin(srv.url, 'GET', '/metrics')).text;
    const normal = (t: string) => metric(t, 'tg_ingest_pipeline_tasks_total{kind="verify",where="pool"}');
    const low = (t: string) => metric(t, 'tg_ingest_pipeline_tasks_total{kind="verify_low_priority",where="pool"}');
    // Sessions verified for real are refunded: ten of them spend nothing of the bot's budget.
    for (let i = 0; i < 10; i++)
      expect(
        (
          await postWebapp(
            own.botId,
            makeInitData(signer, { messengerBotId: own.messengerBotId, user: { id: 9000 + i } }),
            address(),
          )
        ).status,
      ).toBe(202);
    const before = await scrape();
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        postWebapp(own.botId, makeInitData(forger, { messengerBotId: own.messengerBotId, user }), address()),
      ),
    );
    expect(answers.filter((r) => r.body.error === 'initdata_signature_invalid')).toHaveLength(8);
    expect(answers.filter((r) => r.status === 429 && r.body.error === 'auth_rate_limited')).toHaveLength(32);
    const after = await scrape();
    // Only the budget's 8 checks ran at normal priority; the others waited for the low-priority lane.
    expect(normal(after) - normal(before)).toBe(8);
    expect(low(after) - low(before)).toBe(32);
  });
});
