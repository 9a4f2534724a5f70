// A lean PostgreSQL frontend for the writer's connections: one socket is one session, and a whole
// group commit (BEGIN, COPY with its rows, the statements after it, COMMIT) leaves in one write
// and comes back in one round trip. A general client cannot do that: it waits for the server's
// CopyInResponse before it sends the rows, and queues the next statement until the COPY is done,
// so a commit costs three round trips, each delayed by whatever else the event loop is doing.
// Sending the rows ahead is safe: a server whose COPY failed ignores the CopyData and CopyDone that
// follow, and the transaction is then aborted, so nothing after it commits.
//
// Only what the writer needs: simple queries (text results), COPY FROM STDIN, cleartext, MD5 and
// SCRAM-SHA-256 authentication, TCP (no Nagle) or a Unix socket, TLS when the URL asks for it.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { ConnectionLost, PgError } from './wire-errors.js';
import { negotiateTls, openSocket, parseUrl, type Target } from './wire-socket.js';

export { ConnectionLost, PgError } from './wire-errors.js';

export type ScriptPart = { sql: string } | { copyData: Uint8Array | readonly Uint8Array[] };

export interface StatementResult {
  /** CommandComplete tag, e.g. "COPY 120", "INSERT 0 3", "COMMIT" or "ROLLBACK". */
  tag: string;
  rows: (string | null)[][];
}

export interface QueryResult {
  statements: StatementResult[];
  /** The error that ended this query's statements, if any (the rest of its text did not run). */
  error: PgError | null;
  /** Transaction status after it: I idle, T in a transaction, E in a failed transaction. */
  status: 'I' | 'T' | 'E';
  /**
   * The statement (its index in `statements`) during which the server warned, as it does when a commit returns
   * without waiting for its synchronous standby (the wait was cancelled): committed here, perhaps nowhere else.
   */
  warnedAt?: number;
}

export interface WireOptions {
  url: string;
  applicationName: string;
  connectTimeoutMs: number;
}

function header(type: string, bodyLength: number): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(bodyLength + 4, 1);
  return head;
}

function message(type: string, body: Buffer): Buffer {
  return Buffer.concat([header(type, body.length), body]);
}

const cstr = (s: string) => Buffer.from(`${s}\0`, 'utf8');
const COPY_DONE = message('c', Buffer.alloc(0));
const COPY_CHUNK = 256 * 1024;

interface Pending {
  result: QueryResult;
  current: StatementResult;
  resolve: (r: QueryResult) => void;
  reject: (e: Error) => void;
}

/** The fields of an ErrorResponse or NoticeResponse, by their one-letter codes. */
function messageFields(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const end = body.indexOf(0, at + 1);
    // A field without its terminator would restart the loop at 0 forever: a protocol error (the connection is lost).
    if (end < 0) throw new Error('a message field without its terminator');
    fields[String.fromCharCode(body[at]!)] = body.toString('utf8', at + 1, end);
    at = end + 1;
  }
  return fields;
}

export class WireConnection {
  private buf: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  private lost: ConnectionLost | null = null;
  private startup: {
    resolve: () => void;
    reject: (e: Error) => void;
    password: string;
    user: string;
    scram?: { nonce: string; signature?: string };
  } | null = null;
  pid = 0;
  secret = 0;

  private constructor(
    private readonly sock: Socket,
    private readonly target: Target,
  ) {
    sock.on('data', (chunk: Buffer) => this.receive(chunk));
    sock.on('error', (err) => this.fail(new ConnectionLost(err.message)));
    sock.on('close', () => this.fail(new ConnectionLost('the database connection closed')));
  }

  static async connect(o: WireOptions): Promise<WireConnection> {
    const target = parseUrl(o.url);
    const sock = await negotiateTls(await openSocket(target, o.connectTimeoutMs), target);
    const conn = new WireConnection(sock, target);
    const params = [
      'user',
      target.user,
      'database',
      target.database,
      'application_name',
      o.applicationName,
      'client_encoding',
      'UTF8',
      'standard_conforming_strings',
      'on',
      'DateStyle',
      'ISO',
      // As every connection of the service (src/db/connect.ts): its sessions run with enable_seqscan off, which
      // would send any plan past JIT's thresholds.
      'jit',
      'off',
    ];
    const body = Buffer.concat([Buffer.from([0, 3, 0, 0]), ...params.map(cstr), Buffer.from([0])]);
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(body.length + 4, 0);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new ConnectionLost('the database did not finish the start-up in time'));
      }, o.connectTimeoutMs);
      conn.startup = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
        password: target.password,
        user: target.user,
      };
      sock.write(Buffer.concat([len, body]));
    });
    return conn;
  }

  get usable(): boolean {
    return this.lost === null && this.startup === null;
  }

  /**
   * Sends every part in one write. Each `sql` part is a simple query (several statements allowed);
   * a `copyData` part carries the rows of the COPY FROM STDIN that ends the `sql` part before it.
   * Resolves with one result per `sql` part; rejects with ConnectionLost.
   */
  script(parts: ScriptPart[]): Promise<QueryResult[]> {
    if (this.lost !== null) return Promise.reject(this.lost);
    const out: Buffer[] = [];
    const results: Promise<QueryResult>[] = [];
    for (const part of parts) {
      if ('sql' in part) {
        out.push(message('Q', cstr(part.sql)));
        results.push(
          new Promise((resolve, reject) => {
            const result: QueryResult = { statements: [], error: null, status: 'I' };
            this.pending.push({ result, current: { tag: '', rows: [] }, resolve, reject });
          }),
        );
      } else {
        // Each CopyData message is its 5-byte header and a view of the rows, written together
        // (writev): the rows are never copied, however many megabytes a batch holds.
        for (const piece of Array.isArray(part.copyData) ? part.copyData : [part.copyData]) {
          const data = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
          for (let at = 0; at < data.length; at += COPY_CHUNK) {
            const chunk = data.subarray(at, at + COPY_CHUNK);
            out.push(header('d', chunk.length), chunk);
          }
        }
        out.push(COPY_DONE);
      }
    }
    this.sock.cork();
    for (const b of out) this.sock.write(b);
    this.sock.uncork();
    return Promise.all(results);
  }

  /**
   * Cancels whatever the session is running, over a connection of its own. Bounded: through a proxy the connection
   * opens at once even when the server behind it is cut off, and then nothing ever closes it.
   */
  async cancel(timeoutMs = 2000): Promise<void> {
    const sock = await openSocket(this.target, timeoutMs);
    const req = Buffer.alloc(16);
    req.writeInt32BE(16, 0);
    req.writeInt32BE(80877102, 4);
    req.writeInt32BE(this.pid, 8);
    req.writeInt32BE(this.secret, 12);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        sock.destroy();
        resolve();
      }, timeoutMs);
      // A reset from the proxy or the server ends the attempt; unheard, it would be an uncaught exception.
      sock.on('error', () => sock.destroy());
      sock.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      sock.end(req);
    });
  }

  close(): void {
    if (this.lost === null && !this.sock.destroyed) {
      try {
        this.sock.end(message('X', Buffer.alloc(0)));
      } catch {
        // already closing
      }
    }
    this.fail(new ConnectionLost('closed by the writer'));
  }

  private fail(err: ConnectionLost): void {
    if (this.lost !== null) return;
    this.lost = err;
    this.startup?.reject(err);
    this.startup = null;
    for (const p of this.pending.splice(0)) p.reject(err);
    this.sock.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let at = 0;
    while (this.buf.length - at >= 5) {
      const len = this.buf.readInt32BE(at + 1);
      // A length below its own 4 bytes would never move `at` on.
      if (len < 4) {
        this.fail(new ConnectionLost(`protocol error: message length ${len}`));
        return;
      }
      if (this.buf.length - at < len + 1) break;
      try {
        this.handle(this.buf[at]!, this.buf.subarray(at + 5, at + 1 + len));
      } catch (err) {
        this.fail(new ConnectionLost(`protocol error: ${(err as Error).message}`));
        return;
      }
      at += len + 1;
    }
    this.buf = at === this.buf.length ? Buffer.alloc(0) : this.buf.subarray(at);
  }

  private handle(type: number, body: Buffer): void {
    switch (type) {
      case 0x52: // R: authentication
        this.authenticate(body);
        return;
      case 0x4b: // K: BackendKeyData
        this.pid = body.readInt32BE(0);
        this.secret = body.readInt32BE(4);
        return;
      case 0x5a: {
        // Z: ReadyForQuery
        if (this.startup !== null) {
          const s = this.startup;
          this.startup = null;
          s.resolve();
          return;
        }
        const p = this.pending.shift();
        if (p === undefined) throw new Error('ReadyForQuery without a query');
        p.result.status = String.fromCharCode(body[0]!) as QueryResult['status'];
        p.resolve(p.result);
        return;
      }
      case 0x44: {
        // D: DataRow
        const p = this.pending[0];
        if (p === undefined) throw new Error('DataRow without a query');
        const n = body.readInt16BE(0);
        const row: (string | null)[] = [];
        let at = 2;
        for (let i = 0; i < n; i++) {
          const len = body.readInt32BE(at);
          at += 4;
          if (len < 0) row.push(null);
          else {
            row.push(body.toString('utf8', at, at + len));
            at += len;
          }
        }
        p.current.rows.push(row);
        return;
      }
      case 0x43: {
        // C: CommandComplete
        const p = this.pending[0];
        if (p === undefined) throw new Error('CommandComplete without a query');
        p.current.tag = body.toString('utf8', 0, body.length - 1);
        p.result.statements.push(p.current);
        p.current = { tag: '', rows: [] };
        return;
      }
      case 0x45: {
        // E: ErrorResponse
        const err = this.parseError(body);
        if (this.startup !== null) {
          this.startup.reject(err);
          this.startup = null;
          this.sock.destroy();
          return;
        }
        const p = this.pending[0];
        if (p === undefined) throw err;
        p.result.error ??= err;
        return;
      }
      case 0x4e: {
        // N: NoticeResponse. One matters: a commit whose wait for the synchronous standby was cancelled returns
        // COMMIT with a warning ("… committed locally, but might not have been replicated to the standby"). Known by
        // its severity (V, never translated, unlike the text) and the statement it came during (see transaction.ts).
        const p = this.pending[0];
        if (p !== undefined && messageFields(body).V === 'WARNING') p.result.warnedAt = p.result.statements.length;
        return;
      }
      // T RowDescription, G CopyInResponse (the rows went ahead), I EmptyQueryResponse,
      // S ParameterStatus, A notification, n NoData, 1/2/3 extended-protocol completions: nothing to do.
      default:
        return;
    }
  }

  private parseError(body: Buffer): PgError {
    const fields = messageFields(body);
    return new PgError(fields.M ?? 'database error', fields.C ?? '', fields.n, fields.D);
  }

  private authenticate(body: Buffer): void {
    const s = this.startup;
    if (s === null) throw new Error('authentication after start-up');
    const kind = body.readInt32BE(0);
    const send = (b: Buffer) => this.sock.write(message('p', b));
    switch (kind) {
      case 0:
        return;
      case 3:
        return void send(cstr(s.password));
      case 5: {
        const inner = createHash('md5')
          .update(s.password + s.user)
          .digest('hex');
        return void send(
          cstr(
            `md5${createHash('md5')
              .update(Buffer.concat([Buffer.from(inner), body.subarray(4, 8)]))
              .digest('hex')}`,
          ),
        );
      }
      case 10: {
        // SASL: only SCRAM-SHA-256
        s.scram = { nonce: randomBytes(18).toString('base64') };
        const first = Buffer.from(`n,,n=*,r=${s.scram.nonce}`);
        const len = Buffer.allocUnsafe(4);
        len.writeInt32BE(first.length, 0);
        return void send(Buffer.concat([cstr('SCRAM-SHA-256'), len, first]));
      }
      case 11: {
        // SASLContinue
        const attrs = Object.fromEntries(
          body
            .toString('utf8', 4)
            .split(',')
            .map((kv) => [kv[0], kv.slice(2)]),
        );
        const salted = pbkdf2Sync(s.password, Buffer.from(attrs.s!, 'base64'), Number(attrs.i), 32, 'sha256');
        const hmac = (key: Buffer, msg: string) => createHmac('sha256', key).update(msg).digest();
        const clientKey = hmac(salted, 'Client Key');
        const auth = `n=*,r=${s.scram!.nonce},r=${attrs.r},s=${attrs.s},i=${attrs.i},c=biws,r=${attrs.r}`;
        const proof = Buffer.from(
          clientKey.map((b, i) => b ^ hmac(createHash('sha256').update(clientKey).digest(), auth)[i]!),
        );
        s.scram!.signature = hmac(hmac(salted, 'Server Key'), auth).toString('base64');
        return void send(Buffer.from(`c=biws,r=${attrs.r},p=${proof.toString('base64')}`));
      }
      case 12: {
        // SASLFinal
        const v = body
          .toString('utf8', 4)
          .split(',')
          .find((kv) => kv.startsWith('v='))
          ?.slice(2);
        if (v !== s.scram?.signature) throw new Error('the server did not prove it knows the password');
        return;
      }
      default:
        throw new Error(`unsupported authentication method ${kind}`);
    }
  }
}
