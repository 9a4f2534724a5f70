// Run by npm after every install (package.json "postinstall"): mends a known defect of postgres.js 3.4.9 that ends
// the process when a connection to PostgreSQL is lost while a small write waits for the next tick
// (porsager/postgres#1154, #1208; fixes proposed in #1168 and #1209, not released). `closed()` and `terminate()`
// cancel the pending write without forgetting it, and `nextWrite()` then runs on a socket that is gone:
// `TypeError: Cannot read properties of null (reading 'write')`, thrown from setImmediate, which no caller can
// catch. Measured here: a database outage under load, with the report aggregator's transactions, ended the
// service in two runs of three. With the patch the write's queries are rejected with CONNECTION_CLOSED, which the
// service already answers with 503, and the buffered bytes are dropped, never sent on the next connection.
//
//
// A second defect, of COPY ... TO STDOUT (`.readable()`, which the lake's export reads): a chunk pushed into a full
// stream pauses the socket, and the stream's next read resumes it; when that chunk is the last, and the end of the
// copy arrives in the same packet, the stream ends with the socket still paused, and the connection's next query
// never gets its answer (seen here: an export of a few thousand rows hung on the statement after it). The end of the
// copy resumes the socket. And a stream its reader destroyed (a disk full under the file it was written to) no longer
// pauses the socket: its data is dropped, and the connection reads on to the copy's end.
//
// A third, of reserve() (porsager/postgres#1195): a reserve waiting for a connection that the server then ends is taken
// off the queue and handed to the reconnect, which drops it (a reserve is expected to stay queued): the reserve never
// settles, and whoever waits on it (the lake's export, a funnel) waits for ever. The reconnect now resolves a reserve
// handed to it once the connection is ready, or rejects it if the connection fails, as it does a query.
//
// With a reserve now handed a reconnected connection, the holder whose connection was cut must not use it: its queries
// were sent on the new session (inside another holder's transaction) and its release() gave the new holder's
// connection to the pool. A reservation (a reserve, or a transaction) now ends with its connection: its queries, sent
// or waiting, are rejected CONNECTION_CLOSED, and a reserve's release() does nothing.
//
// A fourth, of a `socket` option (src/db/connect.ts gives one, for TCP_NODELAY): when it cannot make a socket (the
// database refuses connections, as during a restart), the connection was left "connecting" for ever, with no close
// and no retry: each such attempt lost the pool a connection, and a pool of one stopped for good. It now closes, and
// the pool retries it after the backoff, as after any other failed connect.
//
// Each edit is applied only to the exact text it expects and is idempotent; a driver whose text differs (a new
// version) fails the install loudly, so the patch is reviewed again rather than silently lost.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MARK = '/* tg-ingest: porsager/postgres#1154 */';
const RESERVE_MARK = '/* tg-ingest: porsager/postgres#1195 */';
const FENCE_MARK = '/* tg-ingest: a reservation ends with its connection */';
const SOCKET_MARK = '/* tg-ingest: a socket that could not be made closes its connection */';
const EDITS = [
  [
    '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    `  function nextWrite(fn) {\n    if (socket === null) { ${MARK}\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      fn && fn(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
  ],
  [
    '    clearImmediate(nextWriteTimer)\n    if (socket) {',
    `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARK}\n    if (socket) {`,
  ],
  [
    '    clearImmediate(nextWriteTimer)\n    socket.removeListener(\'data\', data)',
    `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARK}\n    socket.removeListener('data', data)`,
  ],
  [
    '  function CopyDone() {\n    stream && stream.push(null)\n    stream = null\n  }',
    `  function CopyDone() {\n    stream && stream.push(null)\n    stream = null\n    socket.resume() /* tg-ingest: copy-out ends with the socket paused */\n  }`,
  ],
  [
    '  function CopyData(x) {\n    stream && (stream.push(x.subarray(5)) || socket.pause())\n  }',
    `  function CopyData(x) {\n    stream && (stream.push(x.subarray(5)) || stream.destroyed || socket.pause()) /* tg-ingest: copy-out to a destroyed stream */\n  }`,
  ],
  [
    '        initial.reserve && (initial = null)\n        return fetchArrayTypes()',
    `        initial.reserve && !initial.handed && (initial = null) ${RESERVE_MARK}\n        return fetchArrayTypes()`,
  ],
  [
    '      initial && !initial.reserve && execute(initial)\n      options.shared.retries = retries = 0\n      initial = null\n      return',
    `      const handed = initial.reserve && initial.handed ? initial : null ${RESERVE_MARK}\n      initial && !initial.reserve && execute(initial)\n      options.shared.retries = retries = 0\n      initial = null\n      handed && (ending ? (handed.settled || handed.reject(Errors.connection('CONNECTION_ENDED', options)), terminate()) : handed.settled ? onopen(connection) : handed.reserve(connection))\n      return`,
  ],
  [
    '    } catch (e) {\n      error(e)\n      return\n    }',
    `    } catch (e) {\n      errored(e) ${SOCKET_MARK}\n      if (terminated)\n        return\n      closedTime = performance.now()\n      options.shared.retries++\n      delay = (typeof backoff === 'function' ? backoff(options.shared.retries) : backoff) * 1000\n      onclose(connection, e)\n      return\n    }`,
  ],
];

// A reserve the pool hands to a reconnect (taken off the queue) is marked so, and the reconnect resolves it once the
// connection is ready; one still queued (reserve()'s own connect) is left to the queue, as before. A reserve is
// answered once: one already answered (by another connection, or rejected by its own failed connect) is passed over,
// and a connection that finds it answered opens as usual instead of waiting for ever.
const INDEX_EDITS = [
  [
    '        const query = { reserve: resolve, reject }',
    `        const query = { reserve: (c) => (query.settled = true, resolve(c)), reject: (e) => (query.settled = true, reject(e)) } ${RESERVE_MARK}`,
  ],
  [
    '  function onopen(c) {\n    if (queries.length === 0)\n      return move(c, open)\n\n    let max = Math.ceil(queries.length / (connecting.length + 1))\n      , ready = true\n\n    while (ready && queries.length && max-- > 0) {\n      const query = queries.shift()\n      if (query.reserve)\n        return query.reserve(c)\n\n      ready = c.execute(query)\n    }\n\n    ready\n      ? move(c, busy)\n      : move(c, full)\n  }',
    `  function onopen(c) { ${RESERVE_MARK}\n    let max = Math.ceil(queries.length / (connecting.length + 1))\n      , ready = true\n      , ran = false\n\n    while (ready && queries.length && max > 0) {\n      const query = queries.shift()\n      if (query.reserve && query.settled)\n        continue\n      if (query.reserve)\n        return query.reserve(c)\n\n      ready = c.execute(query)\n      ran = true\n      max--\n    }\n\n    !ran\n      ? move(c, open)\n      : ready\n        ? move(c, busy)\n        : move(c, full)\n  }`,
  ],
  [
    '    const sql = Sql(handler)\n    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }\n\n    return sql\n\n    function handler(q) {\n      c.queue === full',
    `    const mine = c.reserved ${FENCE_MARK}\n    c.onclose = () => { while (queue.length) queue.shift().reject(Errors.connection('CONNECTION_CLOSED', options)) }\n    const sql = Sql(handler)\n    sql.release = () => {\n      if (c.reserved !== mine)\n        return\n      c.reserved = null\n      onopen(c)\n    }\n\n    return sql\n\n    function handler(q) {\n      if (c.reserved !== mine)\n        return q.reject(Errors.connection('CONNECTION_CLOSED', options))\n      c.queue === full`,
  ],
  [
    '    let savepoints = 0\n      , connection\n      , prepare = null\n',
    `    let savepoints = 0\n      , connection\n      , prepare = null\n      , mine = null ${FENCE_MARK}\n`,
  ],
  [
    '      function handler(q) {\n        q.catch(e => uncaughtError || (uncaughtError = e))\n        c.queue === full',
    `      function handler(q) {\n        q.catch(e => uncaughtError || (uncaughtError = e))\n        if (mine && c.reserved !== mine) ${FENCE_MARK}\n          return q.reject(Errors.connection('CONNECTION_CLOSED', options))\n        c.queue === full`,
  ],
  [
    '      c.reserved = () => queries.length\n        ? c.execute(queries.shift())\n        : move(c, reserved)\n    }\n  }',
    `      c.reserved = () => queries.length\n        ? c.execute(queries.shift())\n        : move(c, reserved)\n      mine = c.reserved ${FENCE_MARK}\n    }\n  }`,
  ],
  [
    '    queries.length && connect(c, queries.shift())\n  }',
    `    let q = queries.length ? queries.shift() : null ${RESERVE_MARK}\n    while (q && q.reserve && q.settled)\n      q = queries.length ? queries.shift() : null\n    q && connect(c, q.reserve ? (q.handed = true, q) : q)\n  }`,
  ],
];

const FILES = [
  ['node_modules/postgres/src/connection.js', EDITS],
  ['node_modules/postgres/cjs/src/connection.js', EDITS],
  ['node_modules/postgres/src/index.js', INDEX_EDITS],
  ['node_modules/postgres/cjs/src/index.js', INDEX_EDITS],
];

for (const [file, edits] of FILES) {
  const path = join(ROOT, file);
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    continue; // not installed (yet): nothing to mend
  }
  const before = text;
  for (const [from, to] of edits) {
    if (text.includes(to)) continue;
    if (!text.includes(from)) {
      process.stderr.write(`patch-postgres: ${file} does not hold the text this patch mends; review scripts/patch-postgres.mjs\n`);
      process.exit(1);
    }
    text = text.replace(from, to);
  }
  if (text !== before) writeFileSync(path, text);
}
