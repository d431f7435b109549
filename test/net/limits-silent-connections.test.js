'use strict';
// A connection that never sends a request costs a descriptor for as
// long as the client likes. Each kind below must be closed by the server after headersTimeout
// (here 1 s), while a connection that does send a request is served as usual.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const http = require('node:http');
const { closeSilentConnections } = require('../../lib/net/silent-connections');
const { request } = require('../support/helpers');
const { startTlsServer, h2Connect, h2Request } = require('../support/tls-helpers');

const HEADERS_TIMEOUT_MS = 1000;
const GIVE_UP_MS = 8000; // far above the timeout, far below "never"

let server;
test.before(async () => {
  server = await startTlsServer({
    config: { enableHTTP2: true, disableToHTTPSRedirect: true, headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: 5000, keepAliveTimeout: 5000 },
    files: { 'index.html': 'hello\n' },
  });
});
test.after(async () => {
  if (server) await server.stop();
});

// Resolves with the milliseconds until the server closed the socket; rejects after GIVE_UP_MS.
function closedAfter(socket, openedAt) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after ${GIVE_UP_MS} ms`));
    }, GIVE_UP_MS);
    socket.on('error', () => {}); // a reset counts as closed
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - openedAt);
    });
  });
}

function connectTcp(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

function connectTls(port, alpn) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: [alpn] }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function assertClosedInTime(ms) {
  assert.ok(ms >= HEADERS_TIMEOUT_MS - 100, `closed after ${ms} ms, not before the timeout`);
  assert.ok(ms < HEADERS_TIMEOUT_MS + 3000, `closed after ${ms} ms`);
}

test('plain TCP that sends nothing is closed after headersTimeout', async () => {
  const openedAt = Date.now();
  const socket = await connectTcp(server.port);
  assertClosedInTime(await closedAfter(socket, openedAt));
});

test('TCP to the TLS port that never sends a ClientHello is closed after headersTimeout', async () => {
  const openedAt = Date.now();
  const socket = await connectTcp(server.sport);
  assertClosedInTime(await closedAfter(socket, openedAt));
});

test('TLS (http/1.1) that completes the handshake and sends no request is closed after headersTimeout', async () => {
  const openedAt = Date.now();
  const socket = await connectTls(server.sport, 'http/1.1');
  assertClosedInTime(await closedAfter(socket, openedAt));
});

test('TLS with ALPN h2 and no connection preface is closed after headersTimeout', async () => {
  const openedAt = Date.now();
  const socket = await connectTls(server.sport, 'h2');
  assertClosedInTime(await closedAfter(socket, openedAt));
});

test('a keep-alive connection that sent a request is not cut by the silent-connection timer', async () => {
  const socket = await connectTcp(server.port);
  const chunks = [];
  socket.on('data', (chunk) => chunks.push(chunk));
  socket.write(`GET / HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  const openedAt = Date.now();
  // keepAliveTimeout (5 s) closes it, not the 1 s silent-connection timer
  const ms = await closedAfter(socket, openedAt);
  assert.match(Buffer.concat(chunks).toString(), /^HTTP\/1\.1 200/);
  assert.ok(ms >= 4000, `closed after ${ms} ms: the keep-alive timeout applies after a request`);
  const res = await request(`${server.url}/`);
  assert.equal(res.status, 200);
});

test('an HTTP/2 session that made a request outlives the silent-connection timer', async () => {
  const session = h2Connect(server.httpsUrl);
  try {
    const first = await h2Request(server.httpsUrl, '/', { session });
    assert.equal(first.status, 200);
    const closed = new Promise((resolve) => session.once('close', () => resolve('closed')));
    const pastTheTimer = new Promise((resolve) => setTimeout(resolve, HEADERS_TIMEOUT_MS + 1000, 'open'));
    assert.equal(await Promise.race([closed, pastTheTimer]), 'open');
    const second = await h2Request(server.httpsUrl, '/', { session });
    assert.equal(second.status, 200);
  } finally {
    session.close();
  }
});

test('a connection that closes before its first request leaves no silent-connection timer running', async () => {
  const plain = http.createServer();
  closeSilentConnections(plain, 60000);
  // Registered after closeSilentConnections' own listeners, so it runs after them.
  const closedSocket = new Promise((resolve) => plain.on('connection', (socket) => socket.on('close', () => resolve(socket))));
  await new Promise((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const client = net.connect(plain.address().port, '127.0.0.1', () => client.destroy());
    const socket = await closedSocket;
    const timers = Object.getOwnPropertySymbols(socket).map((key) => socket[key]).filter((value) => value && value.constructor && value.constructor.name === 'Timeout');
    assert.equal(timers.length, 1, 'the socket holds its silent-connection timer');
    assert.equal(timers[0]._destroyed, true, 'the timer was cleared when the socket closed');
  } finally {
    plain.close();
  }
});
