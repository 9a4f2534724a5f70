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
// Each edit is applied only to the exact text it expects and is idempotent; a driver whose text differs (a new
// version) fails the install loudly, so the patch is reviewed again rather than silently lost.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MARK = '/* tg-ingest: porsager/postgres#1154 */';
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
];

for (const file of ['node_modules/postgres/src/connection.js', 'node_modules/postgres/cjs/src/connection.js']) {
  const path = join(ROOT, file);
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    continue; // not installed (yet): nothing to mend
  }
  const before = text;
  for (const [from, to] of EDITS) {
    if (text.includes(to)) continue;
    if (!text.includes(from)) {
      process.stderr.write(`patch-postgres: ${file} does not hold the text this patch mends; review scripts/patch-postgres.mjs\n`);
      process.exit(1);
    }
    text = text.replace(from, to);
  }
  if (text !== before) writeFileSync(path, text);
}
