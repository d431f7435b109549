'use strict';
// A connection a worker accepted just before a stop has not sent its whole request yet: the drain
// waits for it (up to a second from the accept) instead of closing it as an idle keep-alive
// connection. Under systemd a restart stops svr while clients keep connecting; closing such a
// connection would reset a client the kernel had accepted.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const { startServer, readyWorkerPids, waitUntil } = require('../support/helpers');

const openDescriptors = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

test('SIGTERM: a connection accepted before it, with its request still on the way, is answered', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const server = await startServer({ files: { 'index.html': 'answered\n' } });
  t.after(() => server.stop());
  const [worker] = readyWorkerPids(server);
  const before = openDescriptors(worker);

  const socket = net.connect({ port: server.port, host: '127.0.0.1' });
  let text = '';
  socket.setEncoding('utf8').on('data', (d) => { text += d; });
  const ended = new Promise((resolve) => { socket.on('end', resolve); socket.on('error', resolve); socket.on('close', resolve); });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('GET / HTTP/1.1\r\n'); // half a request
  assert.ok(await waitUntil(() => openDescriptors(worker) > before), 'the worker accepted the connection');

  const since = server.stderr().length;
  server.signal('SIGTERM');
  await server.waitForLog(/stopping gracefully/, 'stderr', since);
  socket.write('Host: x\r\nConnection: close\r\n\r\n'); // the rest, after the stop began
  await ended;
  assert.match(text, /^HTTP\/1\.1 200 /, `answered, not reset: ${JSON.stringify(text.slice(0, 200))}`);
  assert.match(text, /answered/);
  assert.equal((await server.exited).code, 0);
});
