'use strict';
// A request body reaches the upstream framed, whatever the method: a GET, DELETE or OPTIONS whose
// body the client sent chunked (Transfer-Encoding is hop-by-hop, so it is not forwarded as it
// came), or an HTTP/2 GET with DATA frames, once went out with neither Content-Length nor chunked
// framing (Node's client frames a body by default only for POST, PUT and the like). The upstream
// then read the body as the next request on the kept-alive connection: a request smuggled past
// svr's rules, answered to the next client on that connection (found by an attack run).
// The upstream here is a Node server, which reads what it is sent as a careful server would: a
// smuggled request shows up as a request of its own.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const http2 = require('node:http2');
const net = require('node:net');
const { once } = require('node:events');
const { startPipeline } = require('../../support/pipeline');
const { startTlsPipeline } = require('../../support/tls-helpers');

const SMUGGLED = 'GET /api/smuggled HTTP/1.1\r\nHost: internal\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n';

// Records every request it reads: method, path, framing and body.
async function recordingUpstream(t) {
  const seen = [];
  const up = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('latin1');
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, te: req.headers['transfer-encoding'], length: req.headers['content-length'], body });
      res.end(`answer to ${req.url}\n`);
    });
  });
  up.listen(0, '127.0.0.1');
  await once(up, 'listening');
  t.after(() => up.close());
  return { seen, url: `http://127.0.0.1:${up.address().port}` };
}

// Sends raw bytes, resolves with what came back once the server has answered `answers` times.
function raw(port, bytes, answers) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve(text); };
    const timer = setTimeout(finish, 5000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if ((text.match(/HTTP\/1\.1 \d{3}/g) || []).length >= answers && /\r\n\r\n[^]*\n$/.test(text)) finish();
    });
    socket.on('close', finish);
  });
}

const chunked = (method, body) => `${method} /api/front HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

test('a chunked body on GET, DELETE or OPTIONS goes upstream chunked: the request inside it stays body', async (t) => {
  const up = await recordingUpstream(t);
  const site = await startPipeline({ config: { proxy: [{ path: '/api/', upstreams: [up.url] }] } });
  t.after(() => site.stop());
  for (const method of ['GET', 'DELETE', 'OPTIONS']) {
    up.seen.length = 0;
    const answer = await raw(site.port, chunked(method, SMUGGLED), 1);
    assert.match(answer, /^HTTP\/1\.1 200 /, `${method}: ${answer.split('\r\n')[0]}`);
    // The next request on the pooled upstream connection is an honest one: it must be answered as
    // itself, not as the smuggled request's leftovers.
    const next = await raw(site.port, 'GET /api/next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 1);
    assert.match(next, /answer to \/api\/next/, `${method}: the next client got ${JSON.stringify(next.slice(-40))}`);
    assert.deepEqual(up.seen.map((r) => `${r.method} ${r.url}`), [`${method} /api/front`, 'GET /api/next'], `${method}: what the upstream read`);
    assert.equal(up.seen[0].body, SMUGGLED, `${method}: the body arrived as a body`);
    assert.equal(up.seen[0].te, 'chunked');
  }
});

test('a body with a Content-Length keeps it; a GET without a body is sent without one', async (t) => {
  const up = await recordingUpstream(t);
  const site = await startPipeline({ config: { proxy: [{ path: '/api/', upstreams: [up.url] }] } });
  t.after(() => site.stop());
  await raw(site.port, `GET /api/front HTTP/1.1\r\nHost: x\r\nContent-Length: ${SMUGGLED.length}\r\nConnection: close\r\n\r\n${SMUGGLED}`, 1);
  await raw(site.port, 'GET /api/plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 1);
  assert.deepEqual(up.seen.map((r) => [r.url, r.length, r.te, r.body.length]), [
    ['/api/front', String(SMUGGLED.length), undefined, SMUGGLED.length],
    ['/api/plain', undefined, undefined, 0],
  ]);
});

test('an HTTP/2 GET with DATA frames reaches an HTTP/1.1 upstream as one request, its body chunked', async (t) => {
  const up = await recordingUpstream(t);
  const site = await startTlsPipeline({ config: { enableHTTP2: true, proxy: [{ path: '/api/', upstreams: [up.url] }] } });
  t.after(() => site.stop());
  const session = http2.connect(site.httpsUrl, { rejectUnauthorized: false });
  t.after(() => session.close());
  const ask = (headers, body) => new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => { text += chunk; });
    stream.on('end', () => resolve(text));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
  assert.equal(await ask({ ':method': 'GET', ':path': '/api/h2front' }, SMUGGLED), 'answer to /api/h2front\n');
  assert.equal(await ask({ ':method': 'GET', ':path': '/api/h2next' }), 'answer to /api/h2next\n');
  assert.deepEqual(up.seen.map((r) => `${r.method} ${r.url}`), ['GET /api/h2front', 'GET /api/h2next']);
  assert.equal(up.seen[0].body, SMUGGLED);
});
