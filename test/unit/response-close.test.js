'use strict';
// lib/http/response.js's whenClosed: the worker's one call per closed response (its socket
// bookkeeping and the access log) from SvrResponse's emit, with no 'close' listener per response.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { SvrResponse, whenClosed } = require('../../lib/http/response');

// A server whose handler is handle(req, res); -> { port, close() }.
async function serve(handle, options = { ServerResponse: SvrResponse }) {
  const server = http.createServer(options, handle);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

function get(port) {
  return new Promise((resolve, reject) => http.get({ port, host: '127.0.0.1', agent: false }, (res) => res.resume().on('end', resolve)).on('error', reject));
}

test('on an SvrResponse the hooks run once as the response closes, in order, before the close listeners', async (t) => {
  let closed;
  const done = new Promise((resolve) => { closed = resolve; });
  const order = [];
  const server = await serve((req, res) => {
    whenClosed(res, () => order.push('hook 1'));
    whenClosed(res, () => order.push('hook 2'));
    res.on('close', () => { order.push('listener'); closed(); });
    assert.equal(res.listenerCount('close'), 1, 'the hook adds no listener');
    res.end('ok');
  });
  t.after(server.close);
  await get(server.port);
  await done;
  assert.deepEqual(order, ['hook 1', 'hook 2', 'listener']);
});

test('the hook runs when the client goes away before the response is written', async (t) => {
  let calls = 0;
  let arrived;
  let closed;
  const requestArrived = new Promise((resolve) => { arrived = resolve; });
  const done = new Promise((resolve) => { closed = resolve; });
  const server = await serve((req, res) => {
    whenClosed(res, () => { calls++; closed(); });
    arrived();
  });
  t.after(server.close);
  const socket = net.connect(server.port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  await requestArrived;
  socket.destroy();
  await done;
  assert.equal(calls, 1);
});

test('any other response gets a close listener; emit passes every argument on', async (t) => {
  let closed;
  const done = new Promise((resolve) => { closed = resolve; });
  const server = await serve((req, res) => {
    whenClosed(res, closed);
    assert.equal(res.listenerCount('close'), 1);
    res.end();
  }, {});
  t.after(server.close);
  await get(server.port);
  await done;
  const res = new SvrResponse(new http.IncomingMessage(new net.Socket()));
  const seen = [];
  res.on('event', (...args) => seen.push(args));
  res.emit('event');
  res.emit('event', 1);
  res.emit('event', 1, 2, 3);
  assert.deepEqual(seen, [[], [1], [1, 2, 3]]);
});
