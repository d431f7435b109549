'use strict';
// The reverse-proxy stage, in process: real upstream servers on 127.0.0.1:0 (and a unix socket),
// the stage driven through http.createServer with a minimal `site`.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const path = require('node:path');
const { once } = require('node:events');
const { createProxyStage } = require('../../../lib/pipeline/proxy');
const { handleUpgrade } = require('../../../lib/net/upgrade');
const { makeTempDir, request } = require('../../support/helpers');
const { writePair } = require('../../support/tls-helpers');

const quietLog = { info() {}, warn() {}, error() {} };
const validateSchema = require('../../../lib/config/validate-schema');

// The config as a worker gets it: the schema's defaults filled in (the proxy restates none). The
// validator's verdict is not the point here: the stage's own refusals are tested below.
function withDefaults(config) {
  const complete = { wwwroot: '.', trustedProxies: [], ...config };
  validateSchema(complete);
  return complete;
}

function listen(server, where = 0) {
  return new Promise((resolve) => server.listen(where, '127.0.0.1', () => resolve(server)));
}

// An upstream that answers JSON describing what it received.
async function echoUpstream(name = 'up') {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push(req);
      const body = JSON.stringify({ name, method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name, connection: 'keep-alive, x-hop', 'x-hop': 'secret', server: 'upstream-server' });
      res.end(body);
    });
  });
  server.connections = 0;
  server.on('connection', () => { server.connections++; });
  await listen(server);
  server.seen = seen;
  server.url = `http://127.0.0.1:${server.address().port}`;
  return server;
}

// The stage behind a real HTTP server; unmatched requests get 404 "next".
async function proxyServer(config) {
  const errors = [];
  const site = {
    config: withDefaults(config),
    log: quietLog,
    sendError(req, res, status) {
      errors.push(status);
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(`svr error ${status}\n`);
    },
  };
  const stage = createProxyStage(site);
  stage.prepare(); // the health checks, as a worker starts them before it listens
  const server = http.createServer((req, res) => {
    res.setHeader('server', 'svr');
    stage(req, res, () => { res.writeHead(404); res.end('next\n'); });
  });
  server.on('upgrade', (req, socket, head) => handleUpgrade(req, socket, head, (q, r) => server.emit('request', q, r)));
  await listen(server);
  server.url = `http://127.0.0.1:${server.address().port}`;
  server.stage = stage;
  server.errors = errors;
  return server;
}

function closeAll(...servers) {
  for (const s of servers) {
    if (s.stage) s.stage.close();
    s.closeAllConnections?.();
    s.close();
  }
}

test('forwards a matching request with stripPrefix, the query kept, hop-by-hop headers removed both ways', async () => {
  const up = await echoUpstream();
  const proxy = await proxyServer({ proxy: [{ path: '/api/', upstreams: [`${up.url}/base`], stripPrefix: true }] });
  try {
    const res = await request(`${proxy.url}/api/items?x=1`, { headers: { connection: 'x-private', 'x-private': 'no', 'keep-alive': 'timeout=5', te: 'trailers', 'x-custom': 'yes' } });
    assert.equal(res.status, 200);
    const got = JSON.parse(res.text);
    assert.equal(got.url, '/base/items?x=1');
    assert.equal(got.headers['x-custom'], 'yes');
    assert.equal(got.headers['x-private'], undefined);
    assert.equal(got.headers['keep-alive'], undefined);
    assert.equal(got.headers.te, undefined);
    assert.equal(got.headers.host, `127.0.0.1:${proxy.address().port}`, 'the client Host is preserved by default');
    assert.equal(res.headers['x-upstream'], 'up');
    assert.equal(res.headers['x-hop'], undefined, 'a header the upstream listed in Connection is hop-by-hop');
    assert.equal(res.headers.server, 'svr');
    const bare = JSON.parse((await request(`${proxy.url}/api`)).text);
    assert.equal(bare.url, '/base/', '"/api" is taken by the "/api/" rule');
    const miss = await request(`${proxy.url}/apix`);
    assert.equal(miss.text, 'next\n');
    assert.equal(up.connections, 1, 'the two proxied requests shared one kept-alive upstream connection');
  } finally { closeAll(proxy, up); }
});

test('X-Forwarded-* and Forwarded: replaced for an untrusted peer, appended for a trusted one', async () => {
  const up = await echoUpstream();
  const forged = { 'x-forwarded-for': '6.6.6.6', forwarded: 'for=6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' };
  const untrusted = await proxyServer({ proxy: [{ path: '/', upstreams: [up.url] }] });
  const trusted = await proxyServer({ proxy: [{ path: '/', upstreams: [up.url], via: true }], trustedProxies: ['127.0.0.0/8'] });
  try {
    let h = JSON.parse((await request(`${untrusted.url}/`, { headers: { ...forged, host: 'site.example' } })).text).headers;
    assert.equal(h['x-forwarded-for'], '127.0.0.1');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], 'site.example');
    assert.equal(h.forwarded, 'for=127.0.0.1;host=site.example;proto=http');
    assert.equal(h.via, undefined);
    h = JSON.parse((await request(`${trusted.url}/`, { headers: { ...forged, host: 'site.example' } })).text).headers;
    assert.equal(h['x-forwarded-for'], '6.6.6.6, 127.0.0.1');
    assert.equal(h['x-forwarded-proto'], 'https');
    assert.equal(h['x-forwarded-host'], 'evil.example');
    assert.equal(h.forwarded, 'for=6.6.6.6, for=127.0.0.1;host=site.example;proto=http');
    assert.equal(h.via, '1.1 svr');
  } finally { closeAll(untrusted, trusted, up); }
});

test('host rules, header set/remove both ways, preserveHost false', async () => {
  const a = await echoUpstream('a');
  const b = await echoUpstream('b');
  const proxy = await proxyServer({
    proxy: [
      { path: '/', host: '*.app.example', upstreams: [a.url], preserveHost: false, requestHeaders: { set: { 'X-Tenant': 'app' }, remove: ['Cookie'] }, responseHeaders: { set: { 'X-Served-By': 'svr' }, remove: ['X-Upstream'] } },
      { path: '/', upstreams: [b.url] },
    ],
  });
  try {
    const res = await request(`${proxy.url}/`, { headers: { host: 'www.app.example', cookie: 'a=1' } });
    const got = JSON.parse(res.text);
    assert.equal(got.name, 'a');
    assert.equal(got.headers.host, `127.0.0.1:${a.address().port}`);
    assert.equal(got.headers['x-tenant'], 'app');
    assert.equal(got.headers.cookie, undefined);
    assert.equal(res.headers['x-served-by'], 'svr');
    assert.equal(res.headers['x-upstream'], undefined);
    assert.equal(JSON.parse((await request(`${proxy.url}/`, { headers: { host: 'other.example' } })).text).name, 'b');
  } finally { closeAll(proxy, a, b); }
});

test('round robin and least-connections spread requests; a POST body streams through', async () => {
  const a = await echoUpstream('a');
  const b = await echoUpstream('b');
  const proxy = await proxyServer({ proxy: [{ path: '/rr/', upstreams: [a.url, b.url] }, { path: '/lc/', upstreams: [a.url, b.url], balance: 'least-connections' }] });
  try {
    const names = [];
    for (let i = 0; i < 4; i++) names.push(JSON.parse((await request(`${proxy.url}/rr/`)).text).name);
    assert.deepEqual(names, ['a', 'b', 'a', 'b']);
    const parallel = await Promise.all([1, 2].map(() => request(`${proxy.url}/lc/`)));
    assert.deepEqual(parallel.map((r) => JSON.parse(r.text).name).sort(), ['a', 'b']);
    const posted = JSON.parse((await request(`${proxy.url}/rr/form`, { method: 'POST', body: 'x'.repeat(100000) })).text);
    assert.equal(posted.body.length, 100000);
    assert.equal(posted.method, 'POST');
  } finally { closeAll(proxy, a, b); }
});

test('a dead upstream: GET is retried on the next one and the dead one is taken out; POST gets 502; all dead gets 502', async () => {
  const good = await echoUpstream('good');
  const dead = await listen(net.createServer());
  const deadUrl = `http://127.0.0.1:${dead.address().port}`;
  await new Promise((resolve) => dead.close(resolve));
  const proxy = await proxyServer({ proxy: [{ path: '/both/', upstreams: [deadUrl, good.url] }, { path: '/none/', upstreams: [deadUrl] }] });
  try {
    assert.equal(JSON.parse((await request(`${proxy.url}/both/`)).text).name, 'good');
    assert.deepEqual(proxy.stage.upstreamHealth().slice(0, 2).map((u) => u.up), [false, true]);
    // Taken out: the next POST goes to the good one without trying the dead one.
    assert.equal((await request(`${proxy.url}/both/`, { method: 'POST', body: 'x' })).status, 200);
    const res = await request(`${proxy.url}/none/`);
    assert.equal(res.status, 502);
    assert.equal(res.text, 'svr error 502\n');
    // Every upstream of /none/ is out; they are tried anyway, so a revived one answers at once.
    const revived = await listen(http.createServer((req, r) => r.end('back')), Number(new URL(deadUrl).port));
    try {
      assert.equal((await request(`${proxy.url}/none/`)).text, 'back');
    } finally { closeAll(revived); }
  } finally { closeAll(proxy, good); }
});

test('POST to a refusing upstream is not retried: 502', async () => {
  const good = await echoUpstream('good');
  const dead = await listen(net.createServer());
  const deadUrl = `http://127.0.0.1:${dead.address().port}`;
  await new Promise((resolve) => dead.close(resolve));
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [deadUrl, good.url] }] });
  try {
    assert.equal((await request(`${proxy.url}/`, { method: 'POST', body: 'data' })).status, 502);
    assert.equal(good.seen.length, 0);
  } finally { closeAll(proxy, good); }
});

test('an upstream that never answers gets 504 after the headers timeout', async () => {
  const silent = await listen(http.createServer(() => {}));
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${silent.address().port}`], timeouts: { headers: 300 } }] });
  try {
    const res = await request(`${proxy.url}/`);
    assert.equal(res.status, 504);
  } finally { closeAll(proxy, silent); }
});

test('a unix socket upstream', async () => {
  const dir = makeTempDir();
  const socketPath = path.join(dir, 'app.sock');
  const server = http.createServer((req, res) => res.end(`unix ${req.url}`));
  await new Promise((resolve) => server.listen(socketPath, resolve));
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [`unix:${socketPath}`] }] });
  try {
    assert.equal((await request(`${proxy.url}/hello`)).text, 'unix /hello');
  } finally { closeAll(proxy, server); }
});

test('an https upstream: its certificate is verified unless the rule opts out', async () => {
  const dir = makeTempDir();
  const pair = writePair(dir, 'up', ['upstream.test']);
  const server = https.createServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => res.end('tls ok'));
  await listen(server);
  const url = `https://127.0.0.1:${server.address().port}`;
  const proxy = await proxyServer({ proxy: [{ path: '/strict/', upstreams: [url] }, { path: '/lax/', upstreams: [url], verifyTLS: false }] });
  try {
    assert.equal((await request(`${proxy.url}/strict/`)).status, 502);
    const lax = await request(`${proxy.url}/lax/`);
    assert.equal(lax.status, 200);
    assert.equal(lax.text, 'tls ok');
  } finally { closeAll(proxy, server); }
});

test('active health checks take a failing upstream out', async () => {
  let healthy = true;
  const up = http.createServer((req, res) => {
    res.writeHead(req.url === '/health' && !healthy ? 500 : 200);
    res.end('ok');
  });
  await listen(up);
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${up.address().port}`], healthCheck: { path: '/health', interval: 50, timeout: 500 } }] });
  try {
    healthy = false;
    for (let i = 0; i < 100 && proxy.stage.upstreamHealth()[0].up; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(proxy.stage.upstreamHealth()[0].up, false);
    healthy = true;
    for (let i = 0; i < 100 && !proxy.stage.upstreamHealth()[0].up; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(proxy.stage.upstreamHealth()[0].up, true);
  } finally { closeAll(proxy, up); }
});

// Backpressure: what the upstream has sent and the client has not yet received stays a few MiB
// (it would reach 256 MiB if the proxy read on regardless). The process's RSS is checked too, but
// loosely: it also counts buffers already passed on that the garbage collector has not freed yet
// (Node 24 frees them later than 20: ~100 MiB of growth with 2-3 MiB in flight).
test('a large download streams with bounded memory (backpressure)', async () => {
  const TOTAL = 256 * 1024 * 1024;
  const chunk = Buffer.alloc(1024 * 1024, 120);
  let sent = 0;
  const up = http.createServer((req, res) => {
    const pump = () => {
      while (sent < TOTAL) {
        sent += chunk.length;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      res.end();
    };
    res.writeHead(200, { 'content-length': TOTAL });
    pump();
  });
  await listen(up);
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${up.address().port}`] }] });
  try {
    const before = process.memoryUsage().rss;
    let peak = before;
    let received = 0;
    let inFlight = 0;
    await new Promise((resolve, reject) => {
      http.get(`${proxy.url}/big`, (res) => {
        res.on('data', (c) => {
          received += c.length;
          inFlight = Math.max(inFlight, sent - received);
          peak = Math.max(peak, process.memoryUsage().rss);
        });
        res.on('end', resolve);
        res.on('error', reject);
      }).on('error', reject);
    });
    assert.equal(received, TOTAL);
    assert.ok(inFlight < 16 * 1024 * 1024, `${Math.round(inFlight / 1048576)} MiB sent upstream and not yet received`);
    assert.ok(peak - before < 192 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
  } finally { closeAll(proxy, up); }
});

test('WebSocket-style Upgrade: 101 relayed, bytes both ways, close propagates; unmatched goes on down the pipeline; refusals and dead upstreams answered', async () => {
  const up = http.createServer();
  up.on('upgrade', (req, socket) => {
    if (req.url === '/ws-refused') return socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\n\r\nrefused');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\nX-Seen-For: ${req.headers['x-forwarded-for']}\r\n\r\n`);
    socket.on('data', (data) => {
      if (String(data) === 'bye') socket.end();
      else socket.write(`echo:${data}`);
    });
  });
  await listen(up);
  const dead = await listen(net.createServer());
  const deadUrl = `http://127.0.0.1:${dead.address().port}`;
  await new Promise((resolve) => dead.close(resolve));
  const proxy = await proxyServer({ proxy: [{ path: '/ws', upstreams: [`http://127.0.0.1:${up.address().port}`] }, { path: '/dead', upstreams: [deadUrl] }] });
  try {
    const client = net.connect(proxy.address().port, '127.0.0.1');
    await once(client, 'connect');
    client.write('GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    const [head] = await once(client, 'data');
    assert.match(String(head), /^HTTP\/1\.1 101 /);
    assert.match(String(head), /X-Seen-For: 127\.0\.0\.1/);
    client.write('ping');
    const [echo] = await once(client, 'data');
    assert.equal(String(echo), 'echo:ping');
    client.write('bye');
    await once(client, 'close');
    assert.match(await rawExchange(proxy, '/nope'), /^HTTP\/1\.1 404 [^]*\r\nConnection: close\r\n[^]*next\n/);
    assert.match(await rawExchange(proxy, '/ws-refused'), /^HTTP\/1\.1 403 [^]*refused/);
    assert.match(await rawExchange(proxy, '/dead'), /^HTTP\/1\.1 502 [^]*svr error 502\n/);
  } finally { closeAll(proxy, up); }
});

async function rawExchange(server, target) {
  const socket = net.connect(server.address().port, '127.0.0.1');
  const chunks = [];
  socket.on('data', (c) => chunks.push(c));
  socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString();
}

test('bad upstream URLs are refused at load with the key path', () => {
  assert.throws(() => createProxyStage({ config: withDefaults({ proxy: [{ path: '/', upstreams: ['ftp://x'] }] }), log: quietLog, sendError() {} }),
    /proxy\[0\]\.upstreams\[0\]: expected an http:\/\/, https:\/\/ or unix:\/absolute\/path upstream, found "ftp:\/\/x"/);
  assert.throws(() => createProxyStage({ config: withDefaults({ proxy: [{ path: '/', upstreams: ['http://x'] }], trustedProxies: ['10.0.0.0/40'] }), log: quietLog, sendError() {} }),
    /trustedProxies\[0\]/);
});

// In-process behind the listeners a worker builds (support/pipeline.js, asWorker: lib/net's servers
// and their Upgrade handling).
test('through svr itself: proxied paths, WebSocket upgrade, static files for the rest, the access log', async (t) => {
  const { startPipeline } = require('../../support/pipeline');
  const up = await echoUpstream('app');
  up.on('upgrade', (req, socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (data) => socket.write(data));
  });
  const server = await startPipeline({
    config: { proxy: [{ path: '/app/', upstreams: [up.url], stripPrefix: true }] },
    files: { 'index.html': 'static home' },
    asWorker: true,
  });
  t.after(async () => { await server.stop(); closeAll(up); });
  const proxied = await request(`${server.url}/app/x?y=1`);
  assert.equal(JSON.parse(proxied.text).url, '/x?y=1');
  assert.match(proxied.headers.server, /^svr/);
  assert.equal((await request(`${server.url}/`)).text, 'static home');
  await server.waitForLog(/"GET \/app\/x\?y=1 HTTP\/1\.1" 200 \d+ /, 'stdout');

  const client = net.connect(server.port, '127.0.0.1');
  await once(client, 'connect');
  client.write('GET /app/socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
  const [head] = await once(client, 'data');
  assert.match(String(head), /^HTTP\/1\.1 101 /);
  client.write('round trip');
  const [echo] = await once(client, 'data');
  assert.equal(String(echo), 'round trip');
  client.destroy();
  await server.waitForLog(/"GET \/app\/socket HTTP\/1\.1" 101 /, 'stdout');
});

test('an absolute-form target: its authority picks the host-scoped rule and is the Host the upstream gets', async (t) => {
  const { startPipeline } = require('../../support/pipeline');
  const up = await echoUpstream('app');
  const server = await startPipeline({
    config: { proxy: [{ path: '/', host: 'app.example', upstreams: [up.url] }] },
    files: { 'index.html': 'static home' },
  });
  t.after(async () => { await server.stop(); closeAll(up); });
  const proxied = await request(server.url, { path: 'http://app.example/x?y=1', headers: { host: 'other.example' } });
  const seen = JSON.parse(proxied.text);
  assert.deepEqual([seen.url, seen.headers.host, seen.headers['x-forwarded-host']], ['/x?y=1', 'app.example', 'app.example']);
  const byHost = await request(server.url, { path: 'http://other.example/', headers: { host: 'app.example' } });
  assert.equal(byHost.text, 'static home', 'the Host header does not pick the rule');
  await server.waitForLog(/"GET http:\/\/app\.example\/x\?y=1 HTTP\/1\.1" 200 /, 'stdout');
});

// In-process behind lib/net's HTTP/2 server (support/pipeline.js, asWorker).
test('HTTPS and HTTP/2 clients to an HTTP upstream: X-Forwarded-Proto https, bodies both ways', async (t) => {
  const { startTlsPipeline, httpsRequest, h2Request } = require('../../support/tls-helpers');
  const up = await echoUpstream('app');
  const server = await startTlsPipeline({ config: { enableHTTP2: true, proxy: [{ path: '/app/', upstreams: [up.url] }] } });
  t.after(async () => { await server.stop(); closeAll(up); });
  const one = JSON.parse((await httpsRequest(`${server.httpsUrl}/app/one`)).text);
  assert.equal(one.headers['x-forwarded-proto'], 'https');
  assert.equal(one.headers.host, `localhost:${server.sport}`);
  const two = await h2Request(server.httpsUrl, '/app/two?q=2', { method: 'POST', body: 'h2 body' });
  assert.equal(two.status, 200);
  const got = JSON.parse(two.text);
  assert.equal(got.url, '/app/two?q=2');
  assert.equal(got.body, 'h2 body');
  assert.equal(got.headers['x-forwarded-proto'], 'https');
  assert.equal(got.headers.host, `localhost:${server.sport}`, 'HTTP/2 :authority becomes Host');
  assert.equal(two.headers['x-upstream'], 'app');
  assert.equal(two.headers.connection, undefined);
});

test('a large upload streams with bounded memory (backpressure)', async () => {
  const TOTAL = 256 * 1024 * 1024;
  const up = http.createServer((req, res) => {
    let received = 0;
    req.on('data', (c) => { received += c.length; });
    req.on('end', () => res.end(String(received)));
  });
  await listen(up);
  // Over the default maxBodySize (200 MiB): a rule for large uploads raises it.
  const proxy = await proxyServer({ proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${up.address().port}`], maxBodySize: TOTAL }] });
  try {
    const before = process.memoryUsage().rss;
    let peak = before;
    const chunk = Buffer.alloc(1024 * 1024, 121);
    const answer = await new Promise((resolve, reject) => {
      const req = http.request(`${proxy.url}/upload`, { method: 'PUT', headers: { 'content-length': TOTAL } }, (res) => {
        let text = '';
        res.on('data', (c) => { text += c; });
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      let sent = 0;
      const pump = () => {
        while (sent < TOTAL) {
          sent += chunk.length;
          peak = Math.max(peak, process.memoryUsage().rss);
          if (!req.write(chunk)) return req.once('drain', pump);
        }
        return req.end();
      };
      pump();
    });
    assert.equal(Number(answer), TOTAL);
    assert.ok(peak - before < 96 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
  } finally { closeAll(proxy, up); }
});

// Spawned: an HTTP/2 CONNECT reaches the pipeline through process/worker.js (onConnect).
test('WebSockets from HTTP/2 clients (extended CONNECT, RFC 8441) to an HTTP/1.1 upstream', async (t) => {
  const http2 = require('node:http2');
  const { startTlsServer } = require('../../support/tls-helpers');
  const { acceptEcho, encodeFrame, decodeFrames } = require('../../support/lb/websocket');
  const up = http.createServer();
  up.on('upgrade', (req, socket) => acceptEcho(req, socket));
  await listen(up);
  const server = await startTlsServer({ config: { enableHTTP2: true, proxy: [{ path: '/app/', upstreams: [`http://127.0.0.1:${up.address().port}`] }] } });
  t.after(async () => { await server.stop(); closeAll(up); });
  const session = http2.connect(server.httpsUrl, { rejectUnauthorized: false });
  const sessionErrors = [];
  session.on('error', (error) => sessionErrors.push(error.code || error.message));
  t.after(() => session.close());
  const [settings] = await once(session, 'remoteSettings');
  assert.equal(settings.enableConnectProtocol, true);
  const stream = session.request({ ':method': 'CONNECT', ':protocol': 'websocket', ':path': '/app/chat', ':scheme': 'https', ':authority': `localhost:${server.sport}`, 'sec-websocket-version': '13' }, { endStream: false });
  const [headers] = await once(stream, 'response');
  assert.equal(headers[':status'], 200);
  stream.write(encodeFrame('over h2', { mask: true }));
  let buffered = Buffer.alloc(0);
  let echo = null;
  for (let i = 0; i < 10 && echo === null; i++) {
    const [chunk] = await once(stream, 'data');
    const { frames, rest } = decodeFrames(Buffer.concat([buffered, chunk]));
    buffered = rest;
    if (frames.length) echo = frames[0].text;
  }
  assert.equal(echo, 'echo:over h2');
  // The close handshake: the upstream ends its socket, svr ends the stream, the client its side.
  const ended = new Promise((resolve) => stream.once('end', resolve));
  stream.resume();
  stream.write(encodeFrame('', { mask: true, opcode: 0x8 }));
  await ended;
  stream.end();
  await new Promise((resolve) => (stream.closed ? resolve() : stream.once('close', resolve)));
  await server.waitForLog(/"CONNECT \/app\/chat HTTP\/2\.0" 200 /, 'stdout');
  // A CONNECT outside the proxy rules is refused like any unknown method.
  const other = session.request({ ':method': 'CONNECT', ':protocol': 'websocket', ':path': '/elsewhere', ':scheme': 'https', ':authority': `localhost:${server.sport}` }, { endStream: false });
  const [otherHeaders] = await once(other, 'response');
  assert.equal(otherHeaders[':status'], 405);
  other.close();
  session.close();
});
