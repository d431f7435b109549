'use strict';
// HTTP/1.1 pipelining (lib/net/pipelining.js): safe requests of one connection run side by side,
// a request with another method runs alone (RFC 9112 §9.3.2), so a pipelined GET after a POST
// sees what the POST did; the answers keep their order either way.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { boundPipelining } = require('../../lib/net/pipelining');

// A server whose handler logs when each request starts and answers when `release(path)` is called.
async function heldServer(t) {
  const log = [];
  const held = new Map();
  const waiters = [];
  const server = http.createServer(boundPipelining((req, res) => {
    log.push(`${req.method} ${req.url}`);
    req.resume();
    held.set(req.url, () => res.end(`${req.method} ${req.url}\n`));
    for (const w of waiters.splice(0)) w();
  }, 16));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));
  const started = (entry) => new Promise((resolve) => {
    const check = () => (log.includes(entry) ? resolve() : waiters.push(check));
    check();
  });
  return { port: server.address().port, log, started, release: (url) => held.get(url)() };
}

// answers(n): a promise of the text once n answers have come.
function send(port, raw) {
  const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
  let text = '';
  const waiting = [];
  socket.setEncoding('latin1');
  socket.on('data', (chunk) => {
    text += chunk;
    for (const w of waiting.splice(0)) w();
  });
  const answers = (n) => new Promise((resolve) => {
    const check = () => ((text.match(/HTTP\/1\.1 200/g) || []).length >= n ? resolve(text) : waiting.push(check));
    check();
  });
  return { socket, answers };
}

// One turn of the event loop after the bytes were parsed: a request allowed to start beside the
// first would have started (Node emits every pipelined request of one read at once).
const turn = () => new Promise((resolve) => setImmediate(resolve));

test('a POST runs alone: the GET pipelined after it starts once it is answered', async (t) => {
  const s = await heldServer(t);
  const client = send(s.port, 'POST /cart HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /cart HTTP/1.1\r\nHost: x\r\n\r\n');
  t.after(() => client.socket.destroy());
  await s.started('POST /cart');
  await turn();
  assert.deepEqual(s.log, ['POST /cart'], 'the GET waits');
  s.release('/cart');
  await s.started('GET /cart');
  s.release('/cart');
  assert.deepEqual(s.log, ['POST /cart', 'GET /cart']);
});

test('a POST pipelined after a GET waits for the GET; GETs run side by side', async (t) => {
  const s = await heldServer(t);
  const client = send(s.port, 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
  t.after(() => client.socket.destroy());
  await s.started('GET /b');
  await turn();
  assert.deepEqual(s.log, ['GET /a', 'GET /b'], 'two GETs at once, the POST waits');
  s.release('/a');
  await turn();
  assert.deepEqual(s.log, ['GET /a', 'GET /b'], 'the POST waits for every request before it');
  s.release('/b');
  await s.started('POST /c');
  s.release('/c');
  assert.match(await client.answers(3), /GET \/a\n[^]*GET \/b\n[^]*POST \/c\n/, 'the answers in order');
});
