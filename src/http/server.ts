// The HTTP front on uWebSockets.js: routing, body reading with a size bound and a global budget,
// and writing replies. Handlers are async functions of (request, body reader) → reply; uWS's
// request object is only valid synchronously, so what a handler needs is copied out first, and
// nothing a client sent may throw out of a uWS callback (that would end the process).
import { randomUUID } from 'node:crypto';
import { HttpError, STATUS_TEXT } from '../base/errors.js';
import { BodyIntake, declaredLength } from './body.js';
import { clientAddress } from '../base/client-address.js';
import type { BodyBudget } from '../limits/body-budget.js';
import { Aborted, replyFor } from './replies.js';
import type { Tarpit } from './tarpit.js';
import uws, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket } from './uws.js';

export interface Request {
  method: string;
  path: string;
  query: string;
  /** Lowercase names. */
  headers: Record<string, string>;
  requestId: string;
  /** Route parameters, in pattern order, percent-decoded (left as sent when they do not decode). */
  params: string[];
  /** The client's address: the peer's, or with TRUST_PROXY the one the proxy forwarded. */
  address: string;
  /** Set by a handler: headers for whatever this request is answered, a refusal too (RateLimit-*). */
  replyHeaders?: Record<string, string>;
}

export interface Reply {
  status: number;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  /** Sent through the server's tarpit: a refusal of a client past its failed-authentication budget. */
  late?: boolean;
  /**
   * A body too large to hold, sent as it is produced (instead of `body`), one chunk at a time as the client reads
   * it. A failure midway closes the connection, so the client never takes a cut body for a whole one.
   */
  stream?: AsyncIterable<string>;
}

/**
 * Resolves with the whole body, or rejects with 413 past the limit, 503 past the budget, or when the client goes away.
 */
export type BodyReader = () => Promise<Buffer>;

export type Handler = (req: Request, readBody: BodyReader) => Promise<Reply> | Reply;

export type Method = 'get' | 'post' | 'patch' | 'del' | 'options' | 'put' | 'any';

export interface RouteOptions {
  /** Bodies above this get 413; the server's default otherwise. */
  maxBodyBytes?: number;
  /**
   * Asked first: a refusal is sent at once from uWS's callback, before the request is copied out or its body read
   * (what arrives of it is dropped), the cheapest answer the server has. A refusal is a shared constant: its reply is
   * built once, by identity, and must not depend on the request.
   */
  shed?: {
    refusal(header: (name: string) => string): HttpError | null;
    /** A request not refused was let in; answered once it is answered (or its client went away). */
    admitted?(): void;
    answered?(): void;
  };
}

export interface ServerOptions {
  maxBodyBytes: number;
  /** Bytes of request bodies held at once, shared by every listener. */
  bodyBudget: BodyBudget;
  trustProxy: boolean;
  /** Called for each answered request (metrics, logs). */
  onReply?: (req: Request, reply: Reply, ms: number) => void;
  onError?: (req: Request, err: unknown) => void;
  /** Headers added to every reply (e.g. CORS). */
  baseHeaders?: (req: Request) => Record<string, string> | undefined;
  /** Holds replies marked `late`, shared by every listener. */
  tarpit?: Tarpit;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IGNORE = (): void => undefined;
/** The answer to a bug (a reply that cannot be serialised, a handler that throws synchronously), from the table. */
const INTERNAL: Reply = replyFor(new HttpError('internal'));
const INTERNAL_BODY = JSON.stringify(INTERNAL.body);

/**
 * After an answer that cut a body short: the rest is read and dropped on a kept-alive connection up to twice the
 * limit, so an honest client reads its answer; past that, or when its length is unknown, the connection is closed.
 */
function closeAfterCut(declared: number | null, max: number): boolean {
  return declared === null || Number.isNaN(declared) || declared > 2 * max;
}

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A reply as it goes out: the reply sent (a 500 when the one built could not be serialised) and its body's bytes. */
interface Serialised {
  reply: Reply;
  body: Uint8Array;
}

export class HttpServer {
  readonly app: TemplatedApp = uws.App();
  private listenSocket: us_listen_socket | null = null;
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  /** Set while shutting down: replies ask clients to close their connections. */
  closing = false;
  /** Each refusal's reply and its bytes, built once: shedding answers thousands a second (RouteOptions.shed). */
  private readonly shedReplies = new WeakMap<HttpError, Serialised>();

  constructor(private readonly opts: ServerOptions) {}

  get inflightRequests(): number {
    return this.inflight;
  }

  route(method: Method, pattern: string, handler: Handler, options: RouteOptions = {}): this {
    const paramCount = (pattern.match(/:[A-Za-z]+/g) ?? []).length;
    const maxBody = options.maxBodyBytes ?? this.opts.maxBodyBytes;
    const shed = options.shed;
    this.app[method](pattern, (res: HttpResponse, req: HttpRequest) => {
      try {
        const refusal = shed?.refusal((name) => req.getHeader(name));
        if (refusal) this.shedReply(res, req, refusal, maxBody);
        else this.serve(res, req, handler, paramCount, maxBody, shed);
      } catch (err) {
        // Only a bug gets here; the request is answered and the process goes on.
        this.opts.onError?.(
          { method: '?', path: '?', query: '', headers: {}, requestId: '?', params: [], address: '' },
          err,
        );
        try {
          res.cork(() => res.writeStatus(STATUS_TEXT[500]!).end(INTERNAL_BODY, true));
        } catch {
          // already answered or aborted
        }
      }
    });
    return this;
  }

  /**
   * The shed path: no body reader, no promise, no copy of the headers beyond what the reply needs. uWS reads and drops
   * the body of a request answered before it (or closes a connection whose body has no length).
   */
  private shedReply(res: HttpResponse, uReq: HttpRequest, refusal: HttpError, max: number): void {
    const started = performance.now();
    // The reply may not go out whole at once (a client that pipelines and does not read): uWS must then be able to
    // tell that the client left, or it ends the process.
    res.onAborted(IGNORE);
    const sent = uReq.getHeader('x-request-id');
    const origin = uReq.getHeader('origin');
    const req: Request = {
      method: 'POST',
      path: uReq.getUrl(),
      query: '',
      headers: origin === '' ? {} : { origin },
      requestId: sent !== '' && REQUEST_ID.test(sent) ? sent : randomUUID(),
      params: [],
      address: '',
    };
    let out = this.shedReplies.get(refusal);
    if (out === undefined) this.shedReplies.set(refusal, (out = this.serialise(req, replyFor(refusal))));
    // As for a body refused in serve().
    const declared = declaredLength(uReq.getHeader('content-length') || undefined);
    const bodyFollows = declared !== null || uReq.getHeader('transfer-encoding') !== '';
    this.write(res, req, out, bodyFollows && closeAfterCut(declared, max));
    this.opts.onReply?.(req, out.reply, performance.now() - started);
  }

  private serve(
    res: HttpResponse,
    uReq: HttpRequest,
    handler: Handler,
    paramCount: number,
    max: number,
    shed?: RouteOptions['shed'],
  ): void {
    const started = performance.now();
    const req = this.readRequest(res, uReq, paramCount);
    this.inflight++;
    // Counted from here, where nothing can throw before `finish` counts it out.
    shed?.admitted?.();
    const intake = new BodyIntake(
      this.opts.bodyBudget,
      max,
      req.method,
      declaredLength(req.headers['content-length']),
      req.headers['transfer-encoding'] !== undefined,
    );
    // Wakes a stream waiting for the client to read, when the client goes away instead.
    const stream = { aborted: false, wake: null as (() => void) | null };
    res.onAborted(() => {
      stream.aborted = true;
      stream.wake?.();
      intake.abort(new Aborted('the client went away'));
    });
    res.onData((chunk, isLast) => intake.take(chunk, isLast));
    const finish = (reply: Reply) => {
      this.inflight--;
      shed?.answered?.();
      // Answered before its body ended (refused early, or shed): what is still to come is read and dropped like a
      // refused body's, never held: it would be taken from the budget and not given back.
      if (!intake.done) intake.refuse(new Aborted('answered before the body ended'));
      intake.release();
      if (this.inflight === 0) this.notifyDrained();
      if (stream.aborted) return;
      const send = () =>
        this.answer(res, req, reply, started, intake.cut && closeAfterCut(intake.declared, max), stream);
      if (reply.late === true && this.opts.tarpit !== undefined) this.opts.tarpit.hold(send);
      else send();
    };
    let result: Promise<Reply> | Reply;
    try {
      result = handler(req, () => intake.body);
    } catch (err) {
      result = Promise.reject(err);
    }
    Promise.resolve(result)
      .then(finish, (err: unknown) => {
        const reply = replyFor(err);
        if (reply.status === 500) this.opts.onError?.(req, err);
        finish(reply);
      })
      .catch((err: unknown) => this.opts.onError?.(req, err));
  }

  /** What a handler needs of uWS's request, copied out: it is valid only during uWS's callback. */
  private readRequest(res: HttpResponse, uReq: HttpRequest, paramCount: number): Request {
    const headers: Record<string, string> = {};
    uReq.forEach((k, v) => {
      headers[k] = v;
    });
    const params: string[] = [];
    for (let i = 0; i < paramCount; i++) params.push(decodeParam(uReq.getParameter(i) ?? ''));
    const sent = headers['x-request-id'];
    return {
      method: uReq.getMethod().toUpperCase(),
      path: uReq.getUrl(),
      query: uReq.getQuery() ?? '',
      headers,
      requestId: sent !== undefined && REQUEST_ID.test(sent) ? sent : randomUUID(),
      params,
      address: clientAddress(
        Buffer.from(res.getRemoteAddressAsText()).toString(),
        headers['x-forwarded-for'],
        this.opts.trustProxy,
      ),
    };
  }

  /** Sends the reply unless the client left meanwhile (a held reply); `close` ends the connection after it. */
  private answer(
    res: HttpResponse,
    req: Request,
    reply: Reply,
    started: number,
    close: boolean,
    stream: { aborted: boolean; wake: (() => void) | null },
  ): void {
    if (stream.aborted) return;
    try {
      // What goes out, which is a 500 when the reply cannot be serialised: that is what onReply reports.
      const out = this.serialise(req, reply);
      this.write(res, req, out, close);
      if (out.reply.stream !== undefined) void this.pump(res, req, out.reply.stream, stream);
      this.opts.onReply?.(req, out.reply, performance.now() - started);
    } catch (err) {
      // Only a bug gets here (the reply is built and serialised above): logged, never thrown out of a promise
      // callback where it would end the process.
      this.opts.onError?.(req, err);
    }
  }

  /** The reply's body as bytes; a body that cannot be serialised (a cycle, a stack overflow) is this request's 500. */
  private serialise(req: Request, reply: Reply): Serialised {
    try {
      const text =
        reply.body === undefined
          ? ''
          : typeof reply.body === 'string' || reply.body instanceof Uint8Array
            ? reply.body
            : JSON.stringify(reply.body);
      return { reply, body: typeof text === 'string' ? Buffer.from(text) : text };
    } catch (err) {
      this.opts.onError?.(req, err);
      return { reply: INTERNAL, body: Buffer.from(INTERNAL_BODY) };
    }
  }

  private write(res: HttpResponse, req: Request, { reply, body }: Serialised, close: boolean): void {
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[reply.status] ?? String(reply.status));
      if (reply.body !== undefined) res.writeHeader('Content-Type', reply.contentType ?? 'application/json');
      res.writeHeader('X-Request-Id', req.requestId);
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      const base = this.opts.baseHeaders?.(req);
      if (base) for (const k in base) res.writeHeader(k, base[k]!);
      if (req.replyHeaders) for (const k in req.replyHeaders) res.writeHeader(k, req.replyHeaders[k]!);
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      if (reply.stream !== undefined) res.writeHeader('Content-Type', reply.contentType ?? 'application/x-ndjson');
      if (reply.stream !== undefined) return;
      if (reply.status === 204) res.endWithoutBody(0, this.closing);
      // No Content-Length: a 304's would have to be the 200's (RFC 9110, 8.6). (uWS writes a wrong one for any
      // argument given, undefined too.)
      else if (reply.status === 304) res.endWithoutBody();
      else if (this.closing || close) res.end(body, true);
      else this.sendBody(res, body);
    });
  }

  /** Sends a stream's chunks, each once the client has taken the one before (uWS buffers what it cannot send). */
  private async pump(
    res: HttpResponse,
    req: Request,
    stream: AsyncIterable<string>,
    state: { aborted: boolean; wake: (() => void) | null },
  ): Promise<void> {
    const it = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await it.next();
        if (state.aborted) break;
        if (next.done) {
          res.cork(() => res.end());
          return;
        }
        let writable = true;
        res.cork(() => {
          writable = res.write(next.value);
        });
        if (!writable && !state.aborted)
          await new Promise<void>((resolve) => {
            state.wake = resolve;
            res.onWritable(() => {
              resolve();
              return true;
            });
          });
        state.wake = null;
        if (state.aborted) break;
      }
      await it.return?.();
    } catch (err) {
      this.opts.onError?.(req, err);
      if (!state.aborted) res.close();
      await it.return?.().catch(() => undefined);
    }
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
      (
        this.app.listen as unknown as (
          h: string,
          p: number,
          o: number,
          cb: (s: us_listen_socket | false) => void,
        ) => void
      )(host, port, 1, (socket) => {
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
