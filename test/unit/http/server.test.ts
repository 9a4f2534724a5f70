import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyBudget } from '../../../src/limits/body-budget.js';
import { HttpServer } from '../../../src/http/server.js';

let server: HttpServer;
let base: string;
const errors: unknown[] = [];

beforeAll(async () => {
  server = new HttpServer({
    maxBodyBytes: 1024,
    bodyBudget: new BodyBudget(1 << 20),
    trustProxy: false,
    onError: (_req, err) => errors.push(err),
  });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  let deep: unknown = 0;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  server
    .route('get', '/cyclic', () => ({ status: 200, body: cyclic }))
    .route('get', '/deep', () => ({ status: 200, body: deep }))
    .route('get', '/ok', () => ({ status: 200, body: { ok: true } }));
  base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
});
afterAll(() => {
  server.stopListening();
});

describe('HttpServer', () => {
  it("a reply that cannot be serialised is that request's 500; the server goes on", async () => {
    for (const path of ['/cyclic', '/deep']) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(500);
      expect(await r.json()).toEqual({ error: 'internal', message: 'Internal error.' });
    }
    expect(errors.length).toBe(2);
    expect((await fetch(`${base}/ok`)).status).toBe(200);
  });
});
