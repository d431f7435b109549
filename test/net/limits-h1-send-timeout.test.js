'use strict';
// sendTimeout on HTTP/1.1, plain and HTTPS (net/http1-send-timeout.js). A client that asked for a
// large file and never read held its connection, the file's descriptor and (compressed) a
// compression slot for ever: a few hundred such connections (slowhttptest -X) filled
// maxConnections. Now a connection whose output waits in its socket and has not moved for
// sendTimeout is reset and gives all of it back; one with nothing waiting (an event stream between
// events, a long poll, a keep-alive connection between requests) is left alone, and a slow download
// that keeps taking bytes is not cut, even within one large write and while the kernel, its send
// buffer full, takes nothing from the server for longer than the timeout. A proxied WebSocket tunnel
// is judged the same way: cut when its client takes nothing of what the upstream pushes, left alone
// when quiet.
// In-process (the listeners a worker builds), so the worker's descriptors are this process's.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { waitUntil } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');
const { startTlsPipeline } = require('../support/tls-helpers');

const SEND_TIMEOUT_MS = 1500;
// Larger than what the kernel's socket buffers take from a client that reads nothing (the server's
// send buffer grows to 4 MiB on Linux), so that the rest waits in the socket.
const BIG_BYTES = 8 * 1024 * 1024;
const BIG = crypto.randomBytes(BIG_BYTES);
// Served as text/plain, so compressed as it streams (it is larger than fileCacheMaxFileSize and
// within compressionMaxFileSize, 8 MiB); random, so gzip gives back about as many bytes.
const TEXT = crypto.randomBytes(7 * 1024 * 1024);
// For the slow readers: more than the kernel takes at once (the server's send buffer grows to
// 4 MiB on loopback), so that the rest waits in the socket. The kernel takes more only once a third
// of its send buffer is free again, about 1.4 MB, which a client reading 640 KiB/s frees in more
// than 2 s, longer than sendTimeout: only the bytes the client acknowledges show it moving. Past
// SLOW_READ_BYTES (4.8 s of that) the client reads at full speed.
const SLOW_BYTES = 5 * 1024 * 1024;
const SLOW_READ_BYTES = 3 * 1024 * 1024;
const SLOW = crypto.randomBytes(SLOW_BYTES);

// An event stream that sends its first event at once and its second when /fire is asked for, and
// a long poll answered then too (customvar1 and 2 persist across the requests of a worker);
// /huge answers SLOW_BYTES in one write.
const SCRIPT = String.raw`
if (href === '/events') {
  disableEndElseCallbackExecute = true;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.write('data: first\n\n');
  customvar1 = res;
  return;
}
if (href === '/poll') {
  disableEndElseCallbackExecute = true;
  customvar2 = res;
  return;
}
if (href === '/fire') {
  customvar1.end('data: second\n\n');
  customvar2.end('polled');
  res.end('fired');
  return;
}
if (href === '/huge') {
  res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
  const body = Buffer.alloc(${SLOW_BYTES});
  for (let i = 0; i < body.length; i++) body[i] = i % 251;
  res.end(body);
  return;
}
`;

// Descriptors of this process open on `target` (a path, or socket:[inode]).
function openOn(target) {
  let count = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === target) count++;
    } catch {} // closed meanwhile
  }
  return count;
}

// Whether this process (the server) still has a descriptor on its end of `client`'s connection to
// serverPort: /proc/net/tcp names the socket's inode, /proc/self/fd the descriptors on it.
function serverEndOpen(client, serverPort) {
  const hexPort = (port) => ':' + port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[9] === '0') continue;
    if (fields[1].endsWith(hexPort(serverPort)) && fields[2].endsWith(hexPort(client.clientPort))) {
      if (openOn(`socket:[${fields[9]}]`) > 0) return true;
    }
  }
  return false;
}

// Resolves with `promise`, or rejects after ms with what was awaited.
function within(promise, ms, what) {
  let timer;
  const late = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// A client that sends one GET and never reads: plain TCP to `port`, or TLS (HTTP/1.1 by ALPN).
// Resolves with the socket once the request is out, askedAt set.
function nonReadingClient(port, target, { secure = false, headers = '' } = {}) {
  return new Promise((resolve) => {
    const send = () => {
      socket.pause();
      socket.clientPort = socket.localPort;
      socket.askedAt = Date.now();
      socket.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`, () => resolve(socket));
    };
    const socket = secure
      ? tls.connect({ port, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, send)
      : net.connect(port, '127.0.0.1', send);
    socket.on('error', () => {}); // the reset
  });
}

// Reads what is left of a non-reading client's connection: resolves with the bytes it got in all
// once the connection ends (a reset, or the server's close).
function drain(socket) {
  return new Promise((resolve) => {
    let bytes = 0;
    socket.on('data', (chunk) => { bytes += chunk.length; });
    socket.once('close', () => resolve(bytes));
    socket.resume();
  });
}

// GET url; resolves with the response once its head came. options: http.get's (agent, headers).
function started(url, options = {}) {
  const get = url.startsWith('https:') ? require('node:https').get : http.get;
  return new Promise((resolve, reject) => {
    const req = get(url, { rejectUnauthorized: false, ...options }, resolve);
    req.on('error', reject);
  });
}

function text(res) {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => { body += chunk; });
    res.on('end', () => resolve(body));
    res.on('error', reject);
  });
}

// Reads res slowly, 16 KiB every 25 ms (640 KiB/s: after each chunk, as long without reading as
// that rate gives it), for its first SLOW_READ_BYTES; the rest at once. Resolves with the body once
// it ended, rejects if the connection was cut first.
function readSlowly(res) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let got = 0;
    res.on('data', (chunk) => {
      chunks.push(chunk);
      got += chunk.length;
      if (got >= SLOW_READ_BYTES) return;
      res.pause();
      setTimeout(() => res.resume(), Math.ceil((25 * chunk.length) / (16 * 1024)));
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('aborted', () => reject(new Error(`cut after ${got} bytes`)));
    res.on('error', reject);
  });
}

function assertHuge(body) {
  assert.equal(body.length, SLOW_BYTES);
  assert.ok(body.every((byte, i) => byte === i % 251), 'every byte, in order');
}

// An upstream that answers what it is asked only when release() is called.
async function heldUpstream(t) {
  const held = [];
  const server = http.createServer((req, res) => held.push(res));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    asked: () => held.length,
    release: () => { for (const res of held.splice(0)) res.end('from upstream'); },
  };
}

test('HTTP/1.1: a client that reads nothing is cut after sendTimeout, its files closed and its compression slot free again; an event stream, a long poll, a keep-alive connection and a proxied request waiting on its upstream that are quiet for longer are not', async (t) => {
  const upstream = await heldUpstream(t);
  const site = await startPipeline({
    asWorker: true,
    config: { sendTimeout: SEND_TIMEOUT_MS, keepAliveTimeout: 60000, compressionMaxStreams: 1, proxy: [{ path: '/app/', upstreams: [upstream.url] }] },
    files: { 'big.bin': BIG, 'big.txt': TEXT, 'index.html': 'hello\n', 'serverSideScript.js': SCRIPT },
  });
  t.after(() => site.stop());
  const proxied = new Promise((resolve, reject) => http.get(`${site.url}/app/held`, { agent: false }, (res) => resolve(text(res))).on('error', reject));
  assert.ok(await waitUntil(() => upstream.asked() === 1, 5000), 'the proxied request waits on its upstream');

  const events = await started(`${site.url}/events`, { agent: false });
  const eventText = text(events);
  await once(events, 'data'); // the first event is out: from here the connection has nothing waiting
  const quietSince = Date.now();
  const poll = new Promise((resolve, reject) => http.get(`${site.url}/poll`, { agent: false }, (res) => resolve(text(res))).on('error', reject));
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => keepAlive.destroy());
  const first = await started(`${site.url}/index.html`, { agent: keepAlive });
  assert.equal(await text(first), 'hello\n');

  const big = path.join(site.root, 'big.bin');
  const bigText = path.join(site.root, 'big.txt');
  const plain = await nonReadingClient(site.port, '/big.bin');
  const compressed = await nonReadingClient(site.port, '/big.txt', { headers: 'Accept-Encoding: gzip\r\n' });
  const heldOpen = await waitUntil(() => openOn(big) === 1 && openOn(bigText) === 1, 5000);
  assert.ok(heldOpen, `each file is open while its client reads nothing (${openOn(big)}, ${openOn(bigText)})`);
  assert.ok(serverEndOpen(plain, site.port) && serverEndOpen(compressed, site.port), 'and so is the server\'s end of each connection');
  const meanwhile = await started(`${site.url}/big.txt`, { agent: false, headers: { 'accept-encoding': 'gzip' } });
  meanwhile.destroy();
  assert.equal(meanwhile.headers['content-encoding'], undefined, 'while one is held, the only compression slot is taken');

  const released = await waitUntil(() => openOn(big) === 0 && openOn(bigText) === 0, 10000);
  const releasedAfter = Date.now() - plain.askedAt;
  assert.ok(released, `the held files are closed (${openOn(big)}, ${openOn(bigText)} open)`);
  assert.ok(!serverEndOpen(plain, site.port) && !serverEndOpen(compressed, site.port), 'and so is the server\'s end of each connection');
  assert.ok(releasedAfter >= SEND_TIMEOUT_MS, `not before sendTimeout: ${releasedAfter} ms after the request`);
  // The connections were reset: reading now, each client meets the end of them, short of the body.
  const [plainGot, compressedGot] = await within(Promise.all([drain(plain), drain(compressed)]), 5000, 'the end of the cut connections');
  assert.ok(plainGot < BIG_BYTES, `the body was cut short (${plainGot} bytes)`);
  assert.ok(compressedGot < BIG_BYTES, `the compressed body was cut short (${compressedGot} bytes)`);

  const fresh = await started(`${site.url}/big.txt`, { agent: false, headers: { 'accept-encoding': 'gzip' } });
  fresh.destroy();
  assert.equal(fresh.headers['content-encoding'], 'gzip', 'the compression slot is free again');

  assert.ok(Date.now() - quietSince > SEND_TIMEOUT_MS, 'the event stream, the long poll, the keep-alive connection and the proxied request have been quiet for longer than sendTimeout');
  const fire = await started(`${site.url}/fire`, { agent: false });
  assert.equal(await text(fire), 'fired');
  assert.equal(await eventText, 'data: first\n\ndata: second\n\n', 'the quiet event stream got its second event and ended');
  assert.equal(await poll, 'polled', 'the long poll got its answer');
  upstream.release();
  assert.equal(await proxied, 'from upstream', 'the proxied request that waited on its upstream got its answer');
  const second = await started(`${site.url}/index.html`, { agent: keepAlive });
  assert.equal(second.req.reusedSocket, true, 'the keep-alive connection is still open');
  assert.equal(await text(second), 'hello\n');
});

test('HTTP/1.1: slow downloads are not cut while they move, a file or one large write', async (t) => {
  const site = await startPipeline({
    asWorker: true,
    config: { sendTimeout: SEND_TIMEOUT_MS },
    files: { 'slow.bin': SLOW, 'serverSideScript.js': SCRIPT },
  });
  t.after(() => site.stop());
  const askedAt = Date.now();
  const [file, huge] = await Promise.all([
    started(`${site.url}/slow.bin`, { agent: false }).then(readSlowly),
    started(`${site.url}/huge`, { agent: false }).then(readSlowly),
  ]);
  assert.ok(file.equals(SLOW), 'the file, whole');
  assertHuge(huge);
  assert.ok(Date.now() - askedAt > 2 * SEND_TIMEOUT_MS, `they took longer than sendTimeout (${Date.now() - askedAt} ms)`);
});

for (const enableHTTP2 of [false, true]) {
  test(`HTTPS/1.1${enableHTTP2 ? ' (on the HTTP/2 listener)' : ''}: a client that reads nothing is cut after sendTimeout, its file closed; a slow download of one large write is not`, async (t) => {
    const site = await startTlsPipeline({
      config: { enableHTTP2, sendTimeout: SEND_TIMEOUT_MS, keepAliveTimeout: 60000 },
      files: { 'big.bin': BIG, 'serverSideScript.js': SCRIPT },
    });
    t.after(() => site.stop());
    const big = path.join(site.root, 'big.bin');
    const slow = started(`${site.httpsUrl}/huge`, { agent: false }).then(readSlowly);
    const client = await nonReadingClient(site.sport, '/big.bin', { secure: true });
    const heldOpen = await waitUntil(() => openOn(big) === 1, 5000);
    assert.ok(heldOpen, 'the file is open while its client reads nothing');
    assert.ok(serverEndOpen(client, site.sport), 'and so is the server\'s end of the connection');
    const released = await waitUntil(() => openOn(big) === 0, 10000);
    const releasedAfter = Date.now() - client.askedAt;
    assert.ok(released, 'the held file is closed');
    assert.ok(!serverEndOpen(client, site.sport), 'and so is the server\'s end of the connection');
    assert.ok(releasedAfter >= SEND_TIMEOUT_MS, `not before sendTimeout: ${releasedAfter} ms after the request`);
    const got = await within(drain(client), 5000, 'the end of the cut connection');
    assert.ok(got < BIG_BYTES, `the body was cut short (${got} bytes)`);
    assertHuge(await slow);
  });
}

test('sendTimeout 0: a client that reads nothing is not cut', async (t) => {
  // The other site, with a limit, tells when the unlimited one would have been cut.
  const [unlimited, limited] = await Promise.all([0, SEND_TIMEOUT_MS].map((sendTimeout) => startPipeline({
    asWorker: true,
    config: { sendTimeout },
    files: { 'big.bin': BIG },
  })));
  t.after(() => Promise.all([unlimited.stop(), limited.stop()]));
  const kept = await nonReadingClient(unlimited.port, '/big.bin', { headers: 'Connection: close\r\n' });
  const cut = await nonReadingClient(limited.port, '/big.bin');
  const keptFile = path.join(unlimited.root, 'big.bin');
  const cutFile = path.join(limited.root, 'big.bin');
  assert.ok(await waitUntil(() => openOn(keptFile) === 1 && openOn(cutFile) === 1, 5000), 'both files are open');
  assert.ok(await waitUntil(() => openOn(cutFile) === 0, 10000), 'the limited site cut its client');
  await within(drain(cut), 5000, 'the end of the cut connection');
  assert.equal(openOn(keptFile), 1, 'the unlimited site still serves its client');
  const got = await within(drain(kept), 10000, 'the whole body');
  assert.ok(got > BIG_BYTES, `the whole file came, after its head (${got} bytes)`);
});

// An upstream that takes WebSocket upgrades: on /ws/push it sends 64 KiB at a time for as long as
// its socket takes them; elsewhere it echoes what comes. Resolves with { url, tunnels } (tunnels:
// its upgraded sockets, in order).
async function tunnelUpstream(t) {
  const tunnels = [];
  const server = http.createServer((req, res) => res.end('no upgrade'));
  server.on('upgrade', (req, socket) => {
    tunnels.push(socket);
    socket.on('error', () => {});
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    if (req.url !== '/ws/push') {
      socket.on('data', (chunk) => socket.write(chunk));
      return;
    }
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const push = () => { while (!socket.destroyed && socket.write(chunk)); };
    socket.on('drain', push);
    push();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); for (const socket of tunnels) socket.destroy(); });
  return { url: `http://127.0.0.1:${server.address().port}`, tunnels };
}

// The header lines of a WebSocket upgrade request.
function webSocketHeaders() {
  return `Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n`;
}

test('HTTP/1.1 tunnels (WebSocket): one whose client takes nothing of what its upstream sends is cut after sendTimeout, upstream connection too; a quiet one is not', async (t) => {
  const upstream = await tunnelUpstream(t);
  const site = await startPipeline({
    asWorker: true,
    config: { sendTimeout: SEND_TIMEOUT_MS, proxy: [{ path: '/ws/', upstreams: [upstream.url] }] },
    files: { 'index.html': 'hello\n' },
  });
  t.after(() => site.stop());

  const quiet = net.connect(site.port, '127.0.0.1');
  quiet.on('error', () => {});
  await once(quiet, 'connect');
  quiet.write(`GET /ws/quiet HTTP/1.1\r\nHost: localhost\r\n${webSocketHeaders()}\r\n`);
  let head = '';
  while (!head.includes('\r\n\r\n')) head += (await once(quiet, 'data'))[0].toString('latin1');
  assert.match(head, /^HTTP\/1\.1 101 /, head);
  const quietSince = Date.now();

  const pushed = await nonReadingClient(site.port, '/ws/push', { headers: webSocketHeaders() });
  assert.ok(await waitUntil(() => upstream.tunnels.length === 2, 5000), 'the upstream took both upgrades');
  const pushTunnel = upstream.tunnels[1];
  const upstreamClosed = new Promise((resolve) => pushTunnel.once('close', resolve));
  assert.ok(serverEndOpen(pushed, site.port), 'the pushed tunnel is open while its client reads nothing');

  const cut = await waitUntil(() => !serverEndOpen(pushed, site.port), 10000);
  const cutAfter = Date.now() - pushed.askedAt;
  assert.ok(cut, 'the server\'s end of the pushed tunnel is closed');
  assert.ok(cutAfter >= SEND_TIMEOUT_MS, `not before sendTimeout: ${cutAfter} ms after the upgrade`);
  await within(upstreamClosed, 5000, 'the close of the upstream end of the cut tunnel');
  await within(drain(pushed), 5000, 'the end of the cut tunnel');

  assert.ok(Date.now() - quietSince > SEND_TIMEOUT_MS, 'the quiet tunnel has been quiet for longer than sendTimeout');
  quiet.write('ping');
  let echo = '';
  while (echo.length < 4) echo += (await within(once(quiet, 'data'), 5000, 'the echo in the quiet tunnel'))[0].toString('latin1');
  assert.equal(echo, 'ping', 'the quiet tunnel still carries bytes both ways');
  quiet.destroy();
});
