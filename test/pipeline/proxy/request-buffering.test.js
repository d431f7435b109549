'use strict';
// A proxy rule's request bodies: streamed to the upstream as they arrive (the default), or read
// whole first with `requestBuffering` and sent with a Content-Length, so a slow upload holds no
// upstream connection; `maxBodySize` refuses a larger body with 413 either way. Against an
// upstream in this process that reports what it got and counts its connections.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startPipeline } = require('../../support/pipeline');
const { startTlsPipeline, h2Request } = require('../../support/tls-helpers');
const { request, waitUntil, makeTempDir } = require('../../support/helpers');
const { openBodyFiles, bodyFileLinks } = require('../../support/body-files');
const { bytesInMemory } = require('../../../lib/pipeline/upstream/request-body');

const MiB = 1024 * 1024;
const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

// Answers "<length> <sha256>" of the request's body, once it came whole.
function answerChecksum(req, res) {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    res.end(`${body.length} ${sha256(body)}`);
  });
}

// An upstream that answers with answerChecksum; `started` has each request's
// head as it arrived, before its body, with the body bytes received so far and, once the request
// closed, whether its body came whole.
async function checksumUpstream(t) {
  const started = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    const entry = { url: req.url, headers: req.headers, received: 0, closed: false, complete: false };
    started.push(entry);
    req.on('data', (chunk) => { entry.received += chunk.length; });
    req.on('close', () => { entry.closed = true; entry.complete = req.complete; });
    answerChecksum(req, res);
  });
  server.on('connection', () => { connections++; });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return { url: `http://127.0.0.1:${server.address().port}`, started, connections: () => connections };
}

async function site(t, upstream, rule = {}) {
  const s = await startPipeline({ config: { proxy: [{ path: '/app/', upstreams: [upstream.url], ...rule }] } });
  t.after(() => s.stop());
  return s;
}

// Sends a head and the first bytes of a body, then waits; `received()` is what came back so far,
// `closed` resolves with all of it once the connection closes.
function partialUpload(port, head, first) {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`${head}\r\n\r\n`);
      socket.write(first, () => resolve({ socket, received: () => text, closed }));
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('error', () => {});
    const closed = new Promise((done) => socket.on('close', () => done(text)));
  });
}

const chunk = (bytes) => `${bytes.length.toString(16)}\r\n${bytes}\r\n`;

test('by default a body streams: the upstream has the request before the body is whole', async (t) => {
  const upstream = await checksumUpstream(t);
  const s = await site(t, upstream);
  const upload = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nContent-Length: 10', 'abcde');
  t.after(() => upload.socket.destroy());
  assert.ok(await waitUntil(() => upstream.started.length === 1, 5000), 'the upstream saw the request head');
  upload.socket.write('fghij');
  assert.ok(await waitUntil(() => upload.received().includes(`10 ${sha256('abcdefghij')}`), 5000), upload.received());
});

test('requestBuffering: a slow upload holds no upstream connection; the whole body goes with a Content-Length', async (t) => {
  const upstream = await checksumUpstream(t);
  const s = await site(t, upstream, { requestBuffering: true });
  const upload = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked', chunk('a'.repeat(5000)));
  t.after(() => upload.socket.destroy());
  assert.ok(await waitUntil(() => bytesInMemory() === 5000, 5000), 'svr is reading the slow upload');
  const other = await request(`${s.url}/app/other`);
  assert.equal(other.status, 200, 'another request went through');
  assert.deepEqual(upstream.started.map((r) => r.url), ['/app/other'], 'the slow upload reached the upstream not at all');
  assert.equal(upstream.connections(), 1);
  upload.socket.write(`${chunk('b'.repeat(3000))}0\r\n\r\n`);
  const expected = `8000 ${sha256('a'.repeat(5000) + 'b'.repeat(3000))}`;
  assert.ok(await waitUntil(() => upload.received().includes(expected), 5000), upload.received());
  const sent = upstream.started[1].headers;
  assert.equal(sent['content-length'], '8000', 'a chunked body is sent with its length');
  assert.equal(sent['transfer-encoding'], undefined);
  assert.ok(await waitUntil(() => bytesInMemory() === 0, 5000), `memory given back: ${bytesInMemory()}`);
});

test('requestBuffering: a body over 1 MiB goes through a file, every byte arrives, the file is closed after', async (t) => {
  const upstream = await checksumUpstream(t);
  const s = await site(t, upstream, { requestBuffering: true });
  for (const size of [MiB, MiB + 1, 3 * MiB + 7]) {
    const body = crypto.randomBytes(size);
    const res = await request(`${s.url}/app/up`, { method: 'PUT', headers: { 'content-length': size }, body });
    assert.equal(res.text, `${size} ${sha256(body)}`, `${size} bytes`);
  }
  assert.ok(await waitUntil(() => bytesInMemory() === 0 && openBodyFiles().length === 0, 5000), 'memory and files given back');
});

test('requestBuffering: a client that goes away mid-upload leaves nothing behind and reaches no upstream', async (t) => {
  const upstream = await checksumUpstream(t);
  const s = await site(t, upstream, { requestBuffering: true });
  const upload = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000', 'a'.repeat(50000));
  assert.ok(await waitUntil(() => bytesInMemory() === 50000, 5000), 'the body is being kept');
  upload.socket.destroy();
  assert.ok(await waitUntil(() => bytesInMemory() === 0, 5000), 'the memory is given back');
  assert.equal(upstream.connections(), 0);
});

test('maxBodySize: a Content-Length over it gets 413 before any byte is read, Connection: close; at it, 200', async (t) => {
  const upstream = await checksumUpstream(t);
  for (const requestBuffering of [false, true]) {
    const s = await site(t, upstream, { maxBodySize: 100, requestBuffering });
    const at = await request(`${s.url}/app/up`, { method: 'POST', headers: { 'content-length': 100 }, body: 'a'.repeat(100) });
    assert.equal(at.text, `100 ${sha256('a'.repeat(100))}`);
    const upload = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nContent-Length: 101', '');
    const answer = await upload.closed;
    assert.match(answer, /^HTTP\/1\.1 413 /, `requestBuffering ${requestBuffering}`);
    assert.match(answer, /\r\nConnection: close\r\n/i);
    assert.match(s.stderr().join('\n'), /proxy\[0\]\.maxBodySize \(100\); answering 413/);
  }
  assert.equal(upstream.started.length, 2, 'only the bodies at the limit reached the upstream');
});

test('maxBodySize: a chunked body is cut at the limit, streamed or buffered', async (t) => {
  for (const requestBuffering of [false, true]) {
    const upstream = await checksumUpstream(t);
    const s = await site(t, upstream, { maxBodySize: 100, requestBuffering });
    const at = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close', `${chunk('a'.repeat(60))}${chunk('b'.repeat(40))}0\r\n\r\n`);
    assert.match(await at.closed, new RegExp(`100 ${sha256('a'.repeat(60) + 'b'.repeat(40))}`), 'a chunked body of exactly maxBodySize');
    const over = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked', `${chunk('a'.repeat(60))}${chunk('b'.repeat(41))}`);
    const answer = await over.closed;
    assert.match(answer, /^HTTP\/1\.1 413 /, `requestBuffering ${requestBuffering}: ${answer.slice(0, 80)}`);
    assert.match(s.stderr().join('\n'), /a body without Content-Length over proxy\[0\]\.maxBodySize \(100\)/);
    if (requestBuffering) assert.equal(upstream.started.length, 1, 'a buffered body over the limit reached no upstream');
  }
});

test('maxBodySize: a streamed chunked body that passes the limit is cut at the upstream too', async (t) => {
  const upstream = await checksumUpstream(t);
  const s = await site(t, upstream, { maxBodySize: 100 });
  const over = await partialUpload(s.port, 'POST /app/up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked', chunk('a'.repeat(60)));
  t.after(() => over.socket.destroy());
  assert.ok(await waitUntil(() => upstream.started.length === 1 && upstream.started[0].received === 60, 5000), 'the first 60 bytes streamed to the upstream');
  over.socket.write(chunk('b'.repeat(41)));
  assert.match(await over.closed, /^HTTP\/1\.1 413 /);
  assert.ok(await waitUntil(() => upstream.started[0].closed, 5000), 'the upstream request ended');
  assert.equal(upstream.started[0].complete, false, 'the upstream saw its request cut, not a whole body');
  assert.equal(upstream.started[0].received, 60, 'no byte past the limit reached the upstream');
});

test('maxBodySize over HTTP/2: a body without content-length is refused once it passes the limit', async (t) => {
  for (const requestBuffering of [false, true]) {
    const upstream = await checksumUpstream(t);
    const s = await startTlsPipeline({ config: { enableHTTP2: true, proxy: [{ path: '/app/', upstreams: [upstream.url], maxBodySize: 100, requestBuffering }] } });
    t.after(() => s.stop());
    const at = await h2Request(s.httpsUrl, '/app/up', { method: 'POST', body: 'a'.repeat(100) });
    assert.equal(at.text, `100 ${sha256('a'.repeat(100))}`);
    const over = await h2Request(s.httpsUrl, '/app/up', { method: 'POST', body: 'a'.repeat(101) });
    assert.equal(over.status, 413, `requestBuffering ${requestBuffering}`);
  }
});

// The URL of a port that refuses connections (it was listening a moment ago).
async function refusingUrl() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test('requestBuffering: a PUT or DELETE with a body is retried on the next upstream when the first refuses, sent whole again from memory or from the file; a POST is not, nor a streamed body', async (t) => {
  const upstream = await checksumUpstream(t);
  const refusing = await refusingUrl();
  // Each rule's round robin begins with the refusing upstream.
  const rule = (path, extra = {}) => ({ path, upstreams: [refusing, upstream.url], ...extra });
  const s = await startPipeline({
    config: {
      proxy: [
        rule('/small/', { requestBuffering: true }),
        rule('/large/', { requestBuffering: true }),
        rule('/delete/', { requestBuffering: true }),
        rule('/post/', { requestBuffering: true }),
        rule('/streamed/'),
      ],
    },
  });
  t.after(() => s.stop());
  const small = crypto.randomBytes(1000);
  const large = crypto.randomBytes(3 * MiB + 7); // through a file
  for (const [path, method, body] of [['/small/x', 'PUT', small], ['/large/x', 'PUT', large], ['/delete/x', 'DELETE', small]]) {
    const res = await request(`${s.url}${path}`, { method, headers: { 'content-length': body.length }, body });
    assert.equal(res.text, `${body.length} ${sha256(body)}`, `${method} ${path}: every byte, once`);
  }
  for (const [path, method] of [['/post/x', 'POST'], ['/streamed/x', 'PUT']]) {
    const res = await request(`${s.url}${path}`, { method, headers: { 'content-length': small.length }, body: small });
    assert.equal(res.status, 502, `${method} ${path} is not retried`);
  }
  assert.deepEqual(upstream.started.map((r) => r.url), ['/small/x', '/large/x', '/delete/x']);
  assert.ok(await waitUntil(() => bytesInMemory() === 0 && openBodyFiles().length === 0, 5000), 'memory and files given back');
});

test('a GET, HEAD, OPTIONS, and a PUT or DELETE without a body are retried on the next upstream when the first refuses; a POST without a body is not', async (t) => {
  const upstream = await checksumUpstream(t);
  const refusing = await refusingUrl();
  const methods = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'POST'];
  // A rule per method, so that each round robin begins with the refusing upstream.
  const s = await startPipeline({ config: { proxy: methods.map((method) => ({ path: `/${method}/`, upstreams: [refusing, upstream.url] })) } });
  t.after(() => s.stop());
  for (const method of methods) {
    const res = await request(`${s.url}/${method}/x`, { method, headers: { 'content-length': 0 } });
    assert.equal(res.status, method === 'POST' ? 502 : 200, method);
  }
  assert.deepEqual(upstream.started.map((r) => r.url), ['/GET/x', '/HEAD/x', '/OPTIONS/x', '/PUT/x', '/DELETE/x'], 'the POST reached no upstream');
});

test('retries defaults to 1: of three upstreams that refuse, two are tried', async (t) => {
  // Three ports that refuse, held open together so that each is a different one.
  const servers = [net.createServer(), net.createServer(), net.createServer()];
  await Promise.all(servers.map((server) => new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))));
  const refusing = servers.map((server) => `http://127.0.0.1:${server.address().port}`);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  const s = await startPipeline({ config: { proxy: [{ path: '/default/', upstreams: refusing }, { path: '/two/', upstreams: refusing, retries: 2 }] } });
  t.after(() => s.stop());
  // The round robin goes in order and skips an upstream already tried: the log line of the
  // request that gives up names the last one tried.
  assert.equal((await request(`${s.url}/default/x`)).status, 502);
  await s.waitForLog(new RegExp(`proxy: GET /default/x -> ${refusing[1]}: ECONNREFUSED; answering 502`));
  assert.equal((await request(`${s.url}/two/x`)).status, 502);
  await s.waitForLog(new RegExp(`proxy: GET /two/x -> ${refusing[2]}: ECONNREFUSED; answering 502`));
});

// An upstream that reads a request's head, answers `sent`, then closes the connection; with
// `answerFirst`, the first request on each connection is answered whole and kept alive, and the
// second gets `sent`. `requests()`: the request heads it read.
async function breakingUpstream(t, sent, { answerFirst = false } = {}) {
  let requests = 0;
  const server = net.createServer((socket) => {
    let head = '';
    let served = 0;
    socket.setEncoding('latin1');
    socket.on('error', () => {});
    socket.on('data', (text) => {
      head += text;
      if (!head.includes('\r\n\r\n')) return;
      head = '';
      requests++;
      served++;
      if (answerFirst && served === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst');
      else socket.end(sent);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${server.address().port}`, requests: () => requests };
}

test('nothing is retried once the upstream has started answering: a cut response stays cut, a cut head is a 502', async (t) => {
  const upstream = await checksumUpstream(t);
  const cutBody = await breakingUpstream(t, 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart');
  const cutHead = await breakingUpstream(t, 'HTTP/1.1 200 OK\r\nContent-Le');
  // On a reused kept-alive connection too: the close follows bytes of the answer, so it is not the
  // stale connection that a retry on a new one is for.
  const cutReused = await breakingUpstream(t, 'HTTP/1.1 200 OK\r\nContent-Le', { answerFirst: true });
  const s = await startPipeline({
    config: {
      proxy: [
        { path: '/body/', upstreams: [cutBody.url, upstream.url] },
        { path: '/head/', upstreams: [cutHead.url, upstream.url] },
        { path: '/reused/', upstreams: [cutReused.url] },
      ],
    },
  });
  t.after(() => s.stop());
  await assert.rejects(request(`${s.url}/body/x`), 'the client\'s response is cut');
  assert.equal((await request(`${s.url}/head/x`)).status, 502);
  assert.deepEqual(upstream.started, [], 'the second upstream got no request');
  assert.equal((await request(`${s.url}/reused/warm`)).text, 'first', 'a first request leaves a kept-alive upstream connection');
  assert.equal((await request(`${s.url}/reused/x`)).status, 502, 'not retried on a new connection');
  assert.equal(cutReused.requests(), 2);
});

// An upstream that answers with answerChecksum, except that, once
// `resetNextReused()` is called, the next request to arrive on a connection that already carried
// one is answered with a TCP reset (the upstream closed a keep-alive connection as the proxy
// reused it).
async function resettingUpstream(t) {
  const server = http.createServer();
  let resetArmed = false;
  let resets = 0;
  const served = new WeakMap(); // socket -> requests it carried
  server.on('request', (req, res) => {
    const before = served.get(req.socket) || 0;
    served.set(req.socket, before + 1);
    if (resetArmed && before > 0) {
      resetArmed = false;
      resets++;
      req.socket.resetAndDestroy();
      return;
    }
    answerChecksum(req, res);
  });
  let connections = 0;
  server.on('connection', () => { connections++; });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    resetNextReused: () => { resetArmed = true; },
    resets: () => resets,
    connections: () => connections,
  };
}

test('requestBuffering: a PUT whose reused upstream connection is reset as it goes is sent again, whole, on a new connection to the same upstream', async (t) => {
  const upstream = await resettingUpstream(t);
  const s = await startPipeline({ config: { proxy: [{ path: '/app/', upstreams: [upstream.url], requestBuffering: true }] } });
  t.after(() => s.stop());
  for (const body of [crypto.randomBytes(1000), crypto.randomBytes(3 * MiB + 7)]) { // memory, then a file
    const warm = await request(`${s.url}/app/warm`);
    assert.equal(warm.text, `0 ${sha256('')}`, 'a first request leaves a kept-alive upstream connection');
    const connectionsBefore = upstream.connections();
    upstream.resetNextReused();
    const res = await request(`${s.url}/app/x`, { method: 'PUT', headers: { 'content-length': body.length }, body });
    assert.equal(res.text, `${body.length} ${sha256(body)}`, `${body.length} bytes: every byte, on the second try`);
    assert.equal(upstream.connections(), connectionsBefore + 1, 'the second try went on a new connection');
  }
  assert.equal(upstream.resets(), 2, 'each PUT met the reset first');
  assert.ok(await waitUntil(() => bytesInMemory() === 0 && openBodyFiles().length === 0, 5000), 'memory and files given back');
});

// The body file cut short while it is being sent: the upstream, on a Unix socket (whose kernel
// buffer holds some 200 KB, so svr is still reading the file), stops reading after its first
// chunk; the file is cut; then it reads on. svr's own file failed, not the upstream: 500, the
// reason in the log, and no retry of a body that cannot be read.
test('requestBuffering: a body file that cannot be read back whole while it is sent: 500, the reason in the log', async (t) => {
  const dir = makeTempDir();
  const socketPath = path.join(dir, 'upstream.sock');
  let upstreamSocket = null;
  let received = 0;
  let connections = 0;
  let upstreamClosed = false;
  const upstream = net.createServer((socket) => {
    connections++;
    upstreamSocket = socket;
    socket.on('data', (chunk) => { received += chunk.length; });
    socket.once('data', () => socket.pause());
    socket.on('error', () => {});
    socket.on('close', () => { upstreamClosed = true; });
  });
  await new Promise((resolve) => upstream.listen(socketPath, resolve));
  t.after(() => { if (upstreamSocket) upstreamSocket.destroy(); upstream.close(); });
  const s = await site(t, { url: `unix:${socketPath}` }, { requestBuffering: true, retries: 2 });
  const size = 3 * MiB;
  const upload = request(`${s.url}/app/put`, { method: 'PUT', headers: { 'content-length': size }, body: crypto.randomBytes(size) });
  assert.ok(await waitUntil(() => received > 0, 5000), 'the upstream got the first bytes');
  const [link] = bodyFileLinks();
  fs.truncateSync(link, 1000);
  upstreamSocket.resume();
  assert.equal((await upload).status, 500);
  assert.ok(received < size, `the upstream got ${received} of ${size} bytes`);
  assert.equal(connections, 1, 'not retried');
  assert.ok(await waitUntil(() => upstreamClosed, 5000), 'the upstream connection is closed');
  await s.waitForLog(/proxy: PUT \/app\/put -> .*the buffered request body could not be read: the request body file ended early; answering 500/);
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
});
