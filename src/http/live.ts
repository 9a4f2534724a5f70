// The live view: GET /admin/live?projectId=… upgrades to a WebSocket; the first message the client
// sends is {"token": "<ADMIN_TOKEN>"} (never a token in the URL), after which it receives one JSON
// message per event of that project as the event is answered, sampled to at most 50 a second per
// viewer (each message says how many were skipped since the one before). It costs nothing when
// nobody watches: the pipeline describes events only for projects that have a viewer, and only as
// many as the viewers can still take this second. Each instance shows the events it answers.
import type { Channel } from '../base/model.js';
import type { LiveEvent } from '../pipeline/batch.js';
import { clientAddress } from '../base/client-address.js';
import { parseUuid } from '../pipeline/ids.js';
import type { TemplatedApp, WebSocket } from './uws.js';

export interface LiveMessage extends LiveEvent {
  channel: Channel;
  botId: string;
  receivedAt: string;
  /** Events of this project this viewer did not get since the message before (the sample's limit). */
  skipped: number;
}

interface ViewerData {
  projectId: string;
  address: string;
  viewer: Viewer | null;
  timer: NodeJS.Timeout | null;
}

interface Viewer {
  ws: WebSocket<ViewerData>;
  tokens: number;
  at: number;
  skipped: number;
}

export interface LiveOptions {
  perSecond: number;
  /** True when the token is the admin token. */
  authorize: (token: string) => boolean;
  /** Charges a failed sign-in to the address; false when it is past its budget. */
  failed: (address: string) => boolean;
  /** Whether the last X-Forwarded-For entry is the client's address (TRUST_PROXY). */
  trustProxy: boolean;
  now?: () => number;
}

const AUTH_TIMEOUT_MS = 5000;
/** Bytes waiting to go to a slow viewer past which its messages are skipped instead. */
const MAX_BUFFERED = 1024 * 1024;

export class LiveHub {
  private readonly viewers = new Map<string, Set<Viewer>>();
  private readonly now: () => number;

  constructor(private readonly o: LiveOptions) {
    this.now = o.now ?? (() => performance.now());
  }

  get watching(): number {
    let n = 0;
    for (const set of this.viewers.values()) n += set.size;
    return n;
  }

  private refill(v: Viewer): void {
    const t = this.now();
    v.tokens = Math.min(this.o.perSecond, v.tokens + ((t - v.at) / 1000) * this.o.perSecond);
    v.at = t;
  }

  /** How many events of a batch the viewers of this project could take now; 0 when nobody watches. */
  sampleFor(projectId: string): number {
    const set = this.viewers.get(projectId);
    if (set === undefined) return 0;
    let most = 0;
    for (const v of set) {
      this.refill(v);
      most = Math.max(most, Math.floor(v.tokens));
    }
    // Something to count skips against even when every viewer is out of tokens.
    return Math.max(1, most);
  }

  /** After a batch is answered: its described events to each viewer, as far as its budget allows. */
  publish(
    projectId: string,
    meta: { channel: Channel; botId: string; receivedAt: string },
    events: LiveEvent[],
    total: number,
  ): void {
    const set = this.viewers.get(projectId);
    if (set === undefined) return;
    for (const v of set) {
      this.refill(v);
      let sent = 0;
      for (const e of events) {
        if (v.tokens < 1 || v.ws.getBufferedAmount() > MAX_BUFFERED) break;
        const message: LiveMessage = { ...e, ...meta, skipped: v.skipped };
        v.ws.send(JSON.stringify(message), false);
        v.tokens -= 1;
        v.skipped = 0;
        sent++;
      }
      v.skipped += total - sent;
    }
  }

  /** Serves the WebSocket route on a uWS app. */
  mount(app: TemplatedApp, path: string): void {
    app.ws<ViewerData>(path, {
      maxPayloadLength: 4096,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      maxBackpressure: 4 * MAX_BUFFERED,
      upgrade: (res, req, context) => {
        const projectId = parseUuid(new URLSearchParams(req.getQuery() ?? '').get('projectId'));
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        const address = clientAddress(
          Buffer.from(res.getRemoteAddressAsText()).toString(),
          req.getHeader('x-forwarded-for') || undefined,
          this.o.trustProxy,
        );
        if (projectId === null) {
          res.cork(() =>
            res
              .writeStatus('400 Bad Request')
              .writeHeader('Content-Type', 'application/json')
              .writeHeader('X-Content-Type-Options', 'nosniff')
              .end('{"error":"bad_request","message":"projectId must be a UUID."}'),
          );
          return;
        }
        res.upgrade<ViewerData>({ projectId, address, viewer: null, timer: null }, key, protocol, extensions, context);
      },
      open: (ws) => {
        const data = ws.getUserData();
        data.timer = setTimeout(
          () => ws.end(4001, 'admin_unauthorized: send {"token": "<ADMIN_TOKEN>"} first'),
          AUTH_TIMEOUT_MS,
        );
      },
      message: (ws, message) => {
        const data = ws.getUserData();
        if (data.viewer !== null) return;
        let token: unknown;
        try {
          token = (JSON.parse(Buffer.from(message).toString('utf8')) as { token?: unknown }).token;
        } catch {
          token = undefined;
        }
        if (typeof token !== 'string' || !this.o.authorize(token)) {
          const limited = !this.o.failed(data.address);
          ws.end(limited ? 4029 : 4001, limited ? 'auth_rate_limited' : 'admin_unauthorized');
          return;
        }
        if (data.timer !== null) clearTimeout(data.timer);
        data.timer = null;
        const viewer: Viewer = { ws, tokens: this.o.perSecond, at: this.now(), skipped: 0 };
        data.viewer = viewer;
        let set = this.viewers.get(data.projectId);
        if (set === undefined) this.viewers.set(data.projectId, (set = new Set()));
        set.add(viewer);
        ws.send(JSON.stringify({ type: 'ready', projectId: data.projectId, perSecond: this.o.perSecond }), false);
      },
      close: (ws) => {
        const data = ws.getUserData();
        if (data.timer !== null) clearTimeout(data.timer);
        if (data.viewer === null) return;
        const set = this.viewers.get(data.projectId);
        set?.delete(data.viewer);
        if (set?.size === 0) this.viewers.delete(data.projectId);
      },
    });
  }
}
