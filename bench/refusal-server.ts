// A process that answers every request to POST /tg with overload's refusal, for `refusal` (refusal.ts):
// `front`, the service's HTTP front and load shedder held past their bound; `bare`, uWebSockets.js alone writing the
// same answer, the floor. Prints its port.
import { STATUS_TEXT } from '../src/base/errors.js';
import { replyFor } from '../src/http/replies.js';
import { HttpServer } from '../src/http/server.js';
import uws from '../src/http/uws.js';
import { BodyBudget } from '../src/limits/body-budget.js';
import { LoadShedder, REFUSAL } from '../src/limits/shedding.js';

const refuser = process.argv[2];
if (refuser === 'front') {
  // A wait past the 2 s that sheds whatever the backlog does: this closed loop never grows one, and its requests are
  // not counted as a tenant's coming back (keyed: false), so after the warm-up's first second every one is refused.
  const shedder = new LoadShedder(
    { queueDelayMs: () => 3000, inHand: () => true, loopDelayMs: () => 0, holdsShare: () => true },
    55,
  );
  const server = new HttpServer({ maxBodyBytes: 1 << 20, bodyBudget: new BodyBudget(64 << 20), trustProxy: false });
  // As the ingestion wing (src/wings/ingestion/wing.ts): the key's project asked first.
  server.route('post', '/tg', () => ({ status: 202 }), {
    shed: { refusal: (header) => shedder.refusal(header('x-api-key') === '' ? null : 'project', false) },
  });
  console.log(await server.listen('127.0.0.1', 0));
} else {
  // The same status, headers and body as the front's refusal, made by the same pieces.
  const reply = replyFor(REFUSAL);
  const body = JSON.stringify(reply.body);
  const app = uws.App();
  app.post('/tg', (res) => {
    res.onAborted(() => undefined);
    res.cork(() => {
      res
        .writeStatus(STATUS_TEXT[reply.status]!)
        .writeHeader('Content-Type', 'application/json')
        .writeHeader('X-Request-Id', '00000000-0000-4000-8000-000000000000')
        .writeHeader('X-Content-Type-Options', 'nosniff');
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
      res.end(body);
    });
  });
  app.listen('127.0.0.1', 0, (socket) => console.log(uws.us_socket_local_port(socket as never)));
}
