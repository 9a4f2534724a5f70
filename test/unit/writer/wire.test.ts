// The writer's PostgreSQL client against a scripted server on a loopback socket: what it sends, how it reads results,
// errors and the warning of a commit not confirmed by the standby, and how it fails when the server misbehaves.
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionLost, PgError, WireConnection } from '../../../src/writer/wire.js';

function msg(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
};
const cstr = (s: string) => Buffer.from(`${s}\0`);
const fields = (f: Record<string, string>) =>
  Buffer.concat([...Object.entries(f).map(([k, v]) => Buffer.concat([Buffer.from(k), cstr(v)])), Buffer.from([0])]);
const ready = (status = 'I') => msg('Z', Buffer.from(status));
const complete = (tag: string) => msg('C', cstr(tag));
const dataRow = (values: (string | null)[]) => {
  const head = Buffer.alloc(2);
  head.writeInt16BE(values.length, 0);
  return msg(
    'D',
    Buffer.concat([
      head,
      ...values.map((v) => (v === null ? int32(-1) : Buffer.concat([int32(Buffer.byteLength(v)), Buffer.from(v)]))),
    ]),
  );
};

/** A server that reads the client's messages (the start-up first, untyped) and answers as the test says. */
class Scripted {
  readonly server: Server;
  sock!: Socket;
  private buf = Buffer.alloc(0);
  private started = false;
  readonly received: { type: string; body: Buffer }[] = [];
  private waiters: (() => void)[] = [];

  constructor() {
    this.server = createServer((s) => {
      this.sock = s;
      s.on('data', (c: Buffer) => this.read(c));
      s.on('error', () => undefined);
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    const { port } = this.server.address() as { port: number };
    return `postgres://writer:secret@127.0.0.1:${port}/events`;
  }

  private read(c: Buffer): void {
    this.buf = Buffer.concat([this.buf, c]);
    for (;;) {
      if (!this.started) {
        if (this.buf.length < 4) return;
        const len = this.buf.readInt32BE(0);
        if (this.buf.length < len) return;
        this.received.push({ type: 'startup', body: this.buf.subarray(4, len) });
        this.buf = this.buf.subarray(len);
        this.started = true;
      } else {
        if (this.buf.length < 5) return;
        const len = this.buf.readInt32BE(1);
        if (this.buf.length < len + 1) return;
        this.received.push({ type: String.fromCharCode(this.buf[0]!), body: this.buf.subarray(5, len + 1) });
        this.buf = this.buf.subarray(len + 1);
      }
      for (const w of this.waiters.splice(0)) w();
    }
  }

  /** Resolves once `n` messages have arrived. */
  async messages(n: number): Promise<{ type: string; body: Buffer }[]> {
    while (this.received.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.received.slice(0, n);
  }

  send(...parts: Buffer[]): void {
    this.sock.write(Buffer.concat(parts));
  }

  close(): Promise<void> {
    this.sock?.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** Connects through the start-up: trust, the session's key, ready. */
async function connected(pg: Scripted): Promise<WireConnection> {
  const url = await pg.listen();
  const conn = WireConnection.connect({ url, applicationName: 'tg-ingest writer 0', connectTimeoutMs: 2000 });
  await pg.messages(1);
  pg.send(msg('R', int32(0)), msg('S', Buffer.concat([cstr('server_version'), cstr('18.0')])));
  pg.send(msg('K', Buffer.concat([int32(4242), int32(77)])), ready());
  return conn;
}

let pg: Scripted;
afterEach(async () => {
  await pg?.close();
});

describe('WireConnection', () => {
  it('starts a session with its parameters and keeps the key that cancels it', async () => {
    pg = new Scripted();
    const conn = await connected(pg);
    const [startup] = await pg.messages(1);
    expect(startup!.body.readInt32BE(0)).toBe(196608); // protocol 3.0
    const params = startup!.body.subarray(4).toString().split('\0');
    expect(params).toEqual(
      expect.arrayContaining(['user', 'writer', 'database', 'events', 'application_name', 'tg-ingest writer 0']),
    );
    expect(params.slice(params.indexOf('jit'), params.indexOf('jit') + 2)).toEqual(['jit', 'off']);
    expect([conn.pid, conn.secret, conn.usable]).toEqual([4242, 77, true]);
    conn.close();
  });

  it('sends a whole script in one write: queries, then the rows of a COPY ahead of its answer', async () => {
    pg = new Scripted();
    const conn = await connected(pg);
    const rows = Buffer.from('a\t1\nb\t2\n');
    const result = conn.script([
      { sql: 'BEGIN' },
      { sql: 'COPY t FROM STDIN' },
      { copyData: [rows.subarray(0, 4), rows.subarray(4)] },
      { sql: 'SELECT x FROM t; COMMIT' },
    ]);
    const sent = await pg.messages(1 + 6);
    expect(sent.slice(1).map((m) => m.type)).toEqual(['Q', 'Q', 'd', 'd', 'c', 'Q']);
    expect(sent[2]!.body.toString()).toBe('COPY t FROM STDIN\0');
    expect(Buffer.concat([sent[3]!.body, sent[4]!.body]).equals(rows)).toBe(true);
    pg.send(complete('BEGIN'), ready('T'));
    pg.send(msg('G', Buffer.from([0, 0, 0])), complete('COPY 2'), ready('T'));
    pg.send(msg('T', Buffer.alloc(2)), dataRow(['1']), dataRow([null]), complete('SELECT 2'), complete('COMMIT'));
    pg.send(ready('I'));
    const [begin, copy, last] = await result;
    expect(begin).toEqual({ statements: [{ tag: 'BEGIN', rows: [] }], error: null, status: 'T' });
    expect(copy!.statements).toEqual([{ tag: 'COPY 2', rows: [] }]);
    expect(last!.statements).toEqual([
      { tag: 'SELECT 2', rows: [['1'], [null]] },
      { tag: 'COMMIT', rows: [] },
    ]);
    expect(last!.status).toBe('I');
    conn.close();
  });

  it('answers a failed statement with its SQLSTATE, constraint and detail, and goes on with the next query', async () => {
    pg = new Scripted();
    const conn = await connected(pg);
    const result = conn.script([{ sql: 'INSERT …' }, { sql: 'ROLLBACK' }]);
    await pg.messages(3);
    pg.send(
      msg('E', fields({ S: 'ERROR', V: 'ERROR', C: '23505', M: 'duplicate key', n: 'events_pkey', D: 'Key (id)' })),
      ready('E'),
      complete('ROLLBACK'),
      ready('I'),
    );
    const [failed, rolledBack] = await result;
    expect(failed!.status).toBe('E');
    expect(failed!.error).toBeInstanceOf(PgError);
    expect(failed!.error).toMatchObject({ message: 'duplicate key', code: '23505' });
    expect(rolledBack).toEqual({ statements: [{ tag: 'ROLLBACK', rows: [] }], error: null, status: 'I' });
    expect(conn.usable).toBe(true);
    conn.close();
  });

  it('marks the statement a WARNING came with: a commit the synchronous standby did not confirm', async () => {
    pg = new Scripted();
    const conn = await connected(pg);
    const result = conn.script([{ sql: 'INSERT …; COMMIT' }, { sql: 'SELECT 1' }]);
    await pg.messages(3);
    const warning = fields({
      S: 'WARNING',
      V: 'WARNING',
      C: '01000',
      M: 'canceling wait for synchronous replication due to user request',
      D: 'The transaction has already committed locally, but might not have been replicated to the standby.',
    });
    // A notice of another severity says nothing.
    const notice = fields({ S: 'NOTICE', V: 'NOTICE', C: '00000', M: 'relation exists, skipping' });
    pg.send(complete('INSERT 0 1'), msg('N', warning), complete('COMMIT'), ready());
    pg.send(msg('N', notice), dataRow(['1']), complete('SELECT 1'), ready());
    const [commit, select] = await result;
    expect(commit!.warnedAt).toBe(1);
    expect(commit!.statements.map((s) => s.tag)).toEqual(['INSERT 0 1', 'COMMIT']);
    expect(select!.warnedAt).toBeUndefined();
    conn.close();
  });

  it('rejects every query in flight with ConnectionLost when the server goes away, and any later one at once', async () => {
    pg = new Scripted();
    const conn = await connected(pg);
    const result = conn.script([{ sql: 'BEGIN' }, { sql: 'COMMIT' }]);
    await pg.messages(3);
    pg.send(complete('BEGIN'));
    pg.sock.destroy();
    await expect(result).rejects.toBeInstanceOf(ConnectionLost);
    expect(conn.usable).toBe(false);
    await expect(conn.script([{ sql: 'SELECT 1' }])).rejects.toBeInstanceOf(ConnectionLost);
  });

  it('drops a server that breaks the protocol: a length shorter than itself, a result nobody asked for', async () => {
    pg = new Scripted();
    const short = await connected(pg);
    const cut = short.script([{ sql: 'BEGIN' }]);
    await pg.messages(2);
    pg.send(Buffer.from([0x43, 0, 0, 0, 2]));
    await expect(cut).rejects.toThrow(/protocol error: message length 2/);
    await pg.close();

    pg = new Scripted();
    const twice = await connected(pg);
    const answered = twice.script([{ sql: 'BEGIN' }]);
    await pg.messages(2);
    // One query, answered twice: the second ReadyForQuery has no query.
    pg.send(complete('BEGIN'), ready(), ready());
    expect((await answered)[0]!.statements).toEqual([{ tag: 'BEGIN', rows: [] }]);
    await expect.poll(() => twice.usable).toBe(false);
    await expect(twice.script([{ sql: 'SELECT 1' }])).rejects.toThrow(/protocol error: ReadyForQuery without a query/);
  });

  it('refuses a start-up the server refuses, and authentication it does not speak', async () => {
    pg = new Scripted();
    const url = await pg.listen();
    const refused = WireConnection.connect({ url, applicationName: 'w', connectTimeoutMs: 2000 });
    await pg.messages(1);
    pg.send(msg('E', fields({ S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed' })));
    await expect(refused).rejects.toMatchObject({ code: '28P01' });
    await pg.close();

    pg = new Scripted();
    const url2 = await pg.listen();
    const kerberos = WireConnection.connect({ url: url2, applicationName: 'w', connectTimeoutMs: 2000 });
    await pg.messages(1);
    pg.send(msg('R', int32(2)));
    await expect(kerberos).rejects.toThrow(/unsupported authentication method 2/);
  });

  it('answers an MD5 challenge with the salted hash of password and user', async () => {
    pg = new Scripted();
    const url = await pg.listen();
    const conn = WireConnection.connect({ url, applicationName: 'w', connectTimeoutMs: 2000 });
    await pg.messages(1);
    pg.send(msg('R', Buffer.concat([int32(5), Buffer.from([1, 2, 3, 4])])));
    const [, password] = await pg.messages(2);
    const { createHash } = await import('node:crypto');
    const inner = createHash('md5').update('secretwriter').digest('hex');
    const expected = `md5${createHash('md5')
      .update(Buffer.concat([Buffer.from(inner), Buffer.from([1, 2, 3, 4])]))
      .digest('hex')}\0`;
    expect(password!.type).toBe('p');
    expect(password!.body.toString()).toBe(expected);
    pg.send(msg('R', int32(0)), ready());
    (await conn).close();
  });
});
