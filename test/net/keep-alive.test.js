'use strict';
// keepAliveTimeout on HTTP/1 connections (lib/net/keep-alive.js): the worker's sweep closes a
// connection idle for keepAliveTimeout + 1 s, as Node's own timer did, and Node arms no timer per
// response. The sweep's decisions are checked with a clock of our own; a real svr shows the
// whole: the announced timeout, the close, a slow response kept, a next request on its way kept.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const { keepAliveSweeper, sweepEveryMs, KEEP_ALIVE_GRACE_MS } = require('../../lib/net/keep-alive');
const { createListeners, serverOptions } = require('../../lib/net/listeners');
const { schemaDefaults, startServer } = require('../support/helpers');
const { startTlsServer } = require('../support/tls-helpers');

const KEEP_ALIVE_MS = 1000;
const CLOSES_AT_MS = KEEP_ALIVE_MS + KEEP_ALIVE_GRACE_MS;

function fakeSocket(bytesRead = 100) {
  return { bytesRead, destroyed: false, destroy() { this.destroyed = true; } };
}

function idleState(overrides = {}) {
  return { active: 0, idleSince: 0, h2: false, used: true, readAtSweep: 0, heardAt: 0, ...overrides };
}

test('the sweep closes a connection idle for keepAliveTimeout + 1 s, not a moment before', () => {
  const socket = fakeSocket();
  const sweep = keepAliveSweeper(new Map([[socket, idleState()]]), KEEP_ALIVE_MS);
  sweep(CLOSES_AT_MS - 1);
  assert.equal(socket.destroyed, false);
  sweep(CLOSES_AT_MS);
  assert.equal(socket.destroyed, true);
});

test('the sweep leaves a request in flight, an HTTP/2 session and a connection yet to send its request', () => {
  const sockets = new Map([
    [fakeSocket(), idleState({ active: 1 })], // a slow response, or a tunnel
    [fakeSocket(), idleState({ h2: true })], // its session's own idle timer
    [fakeSocket(), idleState({ used: false })], // the silent-connection timer's
  ]);
  const sweep = keepAliveSweeper(sockets, KEEP_ALIVE_MS);
  sweep(10 * CLOSES_AT_MS);
  for (const socket of sockets.keys()) assert.equal(socket.destroyed, false);
});

test('bytes received while idle start the wait again; those of the last answered request do not', () => {
  const trickling = fakeSocket();
  const answered = fakeSocket(100);
  const answeredState = idleState({ idleSince: 500 });
  const sweep = keepAliveSweeper(new Map([[trickling, idleState()], [answered, answeredState]]), KEEP_ALIVE_MS);
  sweep(400); // both seen; then the next request's first bytes arrive on one, and the other's answer closes
  trickling.bytesRead += 8;
  answered.bytesRead += 40;
  sweep(CLOSES_AT_MS);
  assert.equal(trickling.destroyed, false, 'a request on its way is not cut');
  sweep(CLOSES_AT_MS + 500);
  assert.equal(answered.destroyed, true, 'idle counted from the answer');
  sweep(2 * CLOSES_AT_MS - 1);
  assert.equal(trickling.destroyed, false);
  sweep(2 * CLOSES_AT_MS);
  assert.equal(trickling.destroyed, true, 'closed keepAliveTimeout + 1 s after the bytes were seen');
});

test('the sweep runs ten times per keepAliveTimeout, between every 50 ms and every second', () => {
  assert.equal(sweepEveryMs(5000), 500);
  assert.equal(sweepEveryMs(100), 50);
  assert.equal(sweepEveryMs(60000), 1000);
});

test('Node arms no keep-alive timer per response: the listeners get keepAliveTimeout 0, the responses announce the configured one', () => {
  const config = { ...schemaDefaults(), keepAliveTimeout: 7000 };
  const [listener] = createListeners(config, { site: () => {}, httpsRedirect: () => {} });
  assert.equal(listener.server.keepAliveTimeout, 0);
  const { ServerResponse: Response } = serverOptions(config); // the class both listeners answer with
  const res = new Response({ method: 'GET', httpVersionMajor: 1, httpVersionMinor: 1, headers: {} });
  res._keepAliveTimeout = 0; // what Node's server copies in
  assert.equal(res._keepAliveTimeout, 7000);
});

// Sends a request on socket (path null: it is being written) and resolves with the response head
// once the response is complete (its Content-Length body read too); rejects if the socket closes first.
function requestOn(socket, path) {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return reject(new Error(`closed before ${path || 'the rest of the request'} was sent`));
    let data = '';
    const onData = (chunk) => {
      data += chunk;
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number((/content-length: (\d+)/i.exec(data) || [])[1] || 0);
      if (data.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve(data.slice(0, end));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed before the answer to ${path || 'the request'}`)));
    if (path !== null) socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    return undefined;
  });
}

function closedAt(socket) {
  return new Promise((resolve) => socket.once('close', () => resolve(Date.now())));
}

const SLOW_SCRIPT = "if (href === '/slow') { disableEndElseCallbackExecute = true; setTimeout(() => responseEnd('slow'), 2500); }\n";

test('a real svr: Keep-Alive announced, an idle connection closed after keepAliveTimeout + 1 s, a slow response and a trickling request kept (HTTP/1.1 and HTTPS)', async (t) => {
  const plain = await startServer({ config: { keepAliveTimeout: KEEP_ALIVE_MS, useWebRootServerSideScript: true }, files: { 'index.html': 'hello\n', 'serverSideScript.js': SLOW_SCRIPT } });
  const secure = await startTlsServer({ config: { keepAliveTimeout: KEEP_ALIVE_MS, disableNonEncryptedServer: true, useWebRootServerSideScript: true }, files: { 'index.html': 'hello\n', 'serverSideScript.js': SLOW_SCRIPT } });
  t.after(async () => {
    await plain.stop();
    await secure.stop();
  });
  const connectors = {
    http: () => net.connect(plain.port, '127.0.0.1'),
    https: () => tls.connect({ port: secure.sport, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }),
  };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all(Object.entries(connectors).flatMap(([scheme, connect]) => [
    (async () => { // idle after one answer: closed keepAliveTimeout + 1 s later, within the sweep's reach
      const idle = connect();
      const head = await requestOn(idle, '/');
      assert.match(head, /\r\nKeep-Alive: timeout=1(\r\n|$)/i, `${scheme}: the timeout is announced`);
      const answeredAt = Date.now();
      const idleFor = (await closedAt(idle)) - answeredAt;
      assert.ok(idleFor >= CLOSES_AT_MS - 20 && idleFor < CLOSES_AT_MS + 1500, `${scheme}: closed ${idleFor} ms after its answer`);
    })(),
    (async () => { // a response slower than keepAliveTimeout + 1 s is not cut
      const slow = connect();
      assert.match(await requestOn(slow, '/slow'), /^HTTP\/1\.1 200/, `${scheme}: the slow response arrives`);
      slow.destroy();
    })(),
    (async () => { // the next request's first bytes come before the close, the rest after it would have come
      const trickle = connect();
      await requestOn(trickle, '/');
      await sleep(CLOSES_AT_MS - 600);
      trickle.write('GET /index.html HT');
      await sleep(1200);
      const rest = requestOn(trickle, null);
      trickle.write('TP/1.1\r\nHost: localhost\r\n\r\n');
      assert.match(await rest, /^HTTP\/1\.1 200/, `${scheme}: the request on its way is answered`);
      trickle.destroy();
    })(),
  ]));
});

// keepAliveTimeout 0 keeps Node's meaning (no idle limit), not nginx's (keep-alive off): nothing
// is announced and the connection outlives the close a timeout of 1 s would have made.
test('keepAliveTimeout 0: no Keep-Alive header, and an idle connection is not closed by the sweep', async (t) => {
  const server = await startServer({ config: { keepAliveTimeout: 0 }, files: { 'index.html': 'hello\n' } });
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => {});
  t.after(async () => {
    socket.destroy();
    await server.stop();
  });
  const head = await requestOn(socket, '/');
  assert.match(head, /^HTTP\/1\.1 200/);
  assert.match(head, /\r\nConnection: keep-alive(\r\n|$)/i);
  assert.doesNotMatch(head, /\r\nKeep-Alive:/i);
  // Idle past the close of the shortest timeout there is (1 ms and the second's grace): the
  // wait is the behaviour under test.
  await new Promise((resolve) => setTimeout(resolve, KEEP_ALIVE_GRACE_MS + 1000));
  assert.match(await requestOn(socket, '/'), /^HTTP\/1\.1 200/, 'the idle connection still answers');
});
