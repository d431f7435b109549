'use strict';
// Bodies for parsePostData were buffered with no cap per worker
// (1,500 held 1 MiB uploads: +1 GiB). maxPostDataInFlight caps the bytes one worker buffers at
// once; beyond it a request gets 503 with Retry-After, and the budget is given back as bodies end.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startServer, request } = require('../../support/helpers');

const MiB = 1024 * 1024;
const SCRIPT = String.raw`
if (href === '/echo') {
  disableEndElseCallbackExecute = true;
  parsePostData(function (fields, files, body) { responseEnd('got ' + body.length); });
  return;
}
`;

// Declares a 1 MiB body, sends all but its last byte and holds; resolves with the response head
// if the server answers before the body is complete.
function heldUpload(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const answered = new Promise((resolve) => {
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.includes('\r\n\r\n')) resolve(data.slice(0, data.indexOf('\r\n\r\n')));
    });
    socket.on('close', () => resolve(data || null));
  });
  socket.write(`POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: ${MiB}\r\n\r\n`);
  socket.write(Buffer.alloc(MiB - 1, 'u'));
  return { socket, answered };
}

test('bodies buffered at once are capped per worker: 503 with Retry-After, budget given back', async () => {
  const server = await startServer({
    config: { maxPostDataInFlight: 3 * MiB, useWebRootServerSideScript: true },
    files: { 'serverSideScript.js': SCRIPT },
  });
  const held = [];
  try {
    assert.equal((await request(`${server.url}/echo`, { method: 'POST', body: 'abc' })).text, 'got 3');
    // four bodies of 1 MiB - 1 byte do not fit in 3 MiB: one of them is refused
    for (let i = 0; i < 4; i++) held.push(heldUpload(server.port));
    const head = await Promise.race(held.map((h) => h.answered));
    assert.match(head, /^HTTP\/1\.1 503/);
    assert.match(head, /\r\nretry-after: \d+/i);
    for (const h of held) h.socket.destroy();
    // the aborted bodies gave their bytes back (once the worker has seen them go): a full-size
    // body fits again
    let full;
    for (let attempt = 0; attempt < 50; attempt++) {
      full = await request(`${server.url}/echo`, { method: 'POST', body: Buffer.alloc(MiB, 'f') });
      if (full.status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(full.text, `got ${MiB}`);
  } finally {
    for (const h of held) h.socket.destroy();
    await server.stop();
  }
});
