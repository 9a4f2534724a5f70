// The HTTP front on uWebSockets.js: routing, body reading with a size bound, and writing replies.
// Handlers are async functions of (request, body reader) → reply; uWS's request object is only
// valid synchronously, so what a handler needs is copied out first.
import { randomUUID } from 'node:crypto';
import { ERRORS, HttpError, STATUS_TEXT } from '../errors.js';
import uws, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket } from './uws.js';

export interface Request {
  method: string;
  path: string;
  query: string;
  /** Lowercase names. */
  headers: Record<string, string>;
  requestId: string;
  /** Route parameters, in pattern order. */
  params: string[];
}

export interface Reply {
  status: number;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

/** Resolves with the whole body, or rejects with 413 past the limit or when the client goes away. */
export type BodyReader = () => Promise<Buffer>;

export type Handler = (req: Request, readBody: BodyReader) => Promise<Reply> | Reply;

export type Method = 'get' | 'post' | 'patch' | 'del' | 'options' | 'put' | 'any';

export interface ServerOptions {
  maxBodyBytes: number;
  /** Called for each answered request (metrics, logs). */
  onReply?: (req: Request, reply: Reply, ms: number) => void;
  onError?: (req: Request, err: unknown) => void;
  /** Headers added to every reply (e.g. CORS, request id). */
  baseHeaders?: (req: Request) => Record<string, string>;
}

class Aborted extends Error {}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export class HttpServer {
  readonly app: TemplatedApp = uws.App();
  private listenSocket: us_listen_socket | null = null;
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  /** Set while shutting down: replies ask clients to close their connections. */
  closing = false;

  constructor(private readonly opts: ServerOptions) {}

  get inflightRequests(): number {
    return this.inflight;
  }

  route(method: Method, pattern: string, handler: Handler): this {
    const paramCount = (pattern.match(/:[A-Za-z]+/g) ?? []).length;
    this.app[method](pattern, (res: HttpResponse, req: HttpRequest) => this.serve(res, req, handler, paramCount));
    return this;
  }

  private serve(res: HttpResponse, uReq: HttpRequest, handler: Handler, paramCount: number): void {
    const started = performance.now();
    const headers: Record<string, string> = {};
    uReq.forEach((k, v) => {
      headers[k] = v;
    });
    const params: string[] = [];
    for (let i = 0; i < paramCount; i++) params.push(decodeURIComponent(uReq.getParameter(i) ?? ''));
    const sent = headers['x-request-id'];
    const req: Request = {
      method: uReq.getMethod().toUpperCase(),
      path: uReq.getUrl(),
      query: uReq.getQuery() ?? '',
      headers,
      requestId: sent !== undefined && REQUEST_ID.test(sent) ? sent : randomUUID(),
      params,
    };
    this.inflight++;

    let aborted = false;
    let bodyDone = false;
    let bodyResolve: (b: Buffer) => void = () => undefined;
    let bodyReject: (e: unknown) => void = () => undefined;
    const bodyPromise = new Promise<Buffer>((resolve, reject) => {
      bodyResolve = resolve;
      bodyReject = reject;
    });
    bodyPromise.catch(() => undefined);
    res.onAborted(() => {
      aborted = true;
      bodyReject(new Aborted('the client went away'));
    });

    const max = this.opts.maxBodyBytes;
    const declared = headers['content-length'] === undefined ? null : Number(headers['content-length']);
    if (declared !== null && declared > max) {
      bodyDone = true;
      bodyReject(new HttpError('payload_too_large', `The body exceeds ${max} bytes.`, { maxBytes: max }));
    } else if (declared === 0 || (declared === null && headers['transfer-encoding'] === undefined)) {
      // No body follows: uWS would never call onData.
      bodyDone = true;
      bodyResolve(Buffer.alloc(0));
    } else if (req.method === 'GET' || req.method === 'OPTIONS' || req.method === 'DELETE' || req.method === 'HEAD') {
      bodyDone = true;
      bodyResolve(Buffer.alloc(0));
    }
    // Memory follows the bytes that arrived, never the Content-Length a client declares: a client
    // that announces 32 MiB and sends three bytes costs three bytes.
    let chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (bodyDone) return;
      const n = chunk.byteLength;
      if (size + n > max) {
        bodyDone = true;
        chunks = [];
        bodyReject(new HttpError('payload_too_large', `The body exceeds ${max} bytes.`, { maxBytes: max }));
        return;
      }
      // uWS neuters the chunk when this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      size += n;
      if (isLast) {
        bodyDone = true;
        bodyResolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
        chunks = [];
      }
    });

    const finish = (reply: Reply) => {
      this.inflight--;
      if (this.inflight === 0) this.notifyDrained();
      if (aborted) return;
      this.write(res, req, reply);
      this.opts.onReply?.(req, reply, performance.now() - started);
    };
    let result: Promise<Reply> | Reply;
    try {
      result = handler(req, () => bodyPromise);
    } catch (err) {
      result = Promise.reject(err);
    }
    Promise.resolve(result).then(finish, (err: unknown) => {
      if (!(err instanceof HttpError) && !(err instanceof Aborted)) this.opts.onError?.(req, err);
      finish(errorReply(err));
    });
  }

  private write(res: HttpResponse, req: Request, reply: Reply): void {
    const text = reply.body === undefined ? '' : typeof reply.body === 'string' || reply.body instanceof Uint8Array ? reply.body : JSON.stringify(reply.body);
    const body = typeof text === 'string' ? Buffer.from(text) : text;
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[reply.status] ?? String(reply.status));
      if (reply.body !== undefined) res.writeHeader('Content-Type', reply.contentType ?? 'application/json');
      res.writeHeader('X-Request-Id', req.requestId);
      const base = this.opts.baseHeaders?.(req);
      if (base) for (const k in base) res.writeHeader(k, base[k]!);
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      if (reply.status === 204) res.endWithoutBody(0, this.closing);
      else if (this.closing) res.end(body, true);
      else this.sendBody(res, body);
    });
  }

  /**
   * tryEnd rather than end: end() would buffer whatever the socket cannot take, so a client that
   * pipelines requests and never reads made the process buffer gigabytes. With tryEnd the rest waits
   * for onWritable, and uWS reads no further request on that connection until this one is out.
   */
  private sendBody(res: HttpResponse, body: Uint8Array): void {
    const base = res.getWriteOffset();
    const [ok, done] = res.tryEnd(body, body.byteLength);
    if (ok || done) return;
    res.onWritable((offset) => {
      const [more, finished] = res.tryEnd(body.subarray(offset - base), body.byteLength);
      return more || finished;
    });
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      // Exclusive: uWS defaults to SO_REUSEPORT, which would let a second server share the port silently.
      (this.app.listen as unknown as (h: string, p: number, o: number, cb: (s: us_listen_socket | false) => void) => void)(host, port, 1, (socket) => {
        if (!socket) {
          reject(new Error(`cannot listen on ${host}:${port} (is the port in use?)`));
          return;
        }
        this.listenSocket = socket;
        resolve(uws.us_socket_local_port(socket as never));
      });
    });
  }

  /** Stops accepting connections; resolves when no request is in flight. */
  stopListening(): void {
    this.closing = true;
    if (this.listenSocket) {
      uws.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
  }

  drained(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private notifyDrained(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}

export function errorReply(err: unknown): Reply {
  if (err instanceof HttpError) {
    const headers: Record<string, string> = {};
    if (err.retryAfterS !== undefined) headers['Retry-After'] = String(err.retryAfterS);
    else if (err.status === 503 || err.status === 429) headers['Retry-After'] = '1';
    return { status: err.status, body: err.body(), headers };
  }
  if (err instanceof Aborted) return { status: 400, body: { error: 'bad_request', message: err.message } };
  return { status: 500, body: { error: 'internal', message: ERRORS.internal.message } };
}
