'use strict';
// Which upgrades the reverse proxy tunnels. A tunnel is outside svr's access rules, forwarding
// headers, access log and metrics (whatever is sent inside it goes straight to the upstream), so
// by default only a well-formed WebSocket handshake is tunnelled: GET, Upgrade: websocket, a
// Sec-WebSocket-Key of 16 bytes and Sec-WebSocket-Version 13. Other tokens (h2c, the "h2c
// smuggling" pattern) are forwarded as ordinary requests without the upgrade, unless a rule lists
// them in upgradeProtocols; and the sockets are joined only when the upstream's 101 names the
// protocol asked for.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const http2 = require('node:http2');
const net = require('node:net');
const { once } = require('node:events');
const { startPipeline } = require('../../support/pipeline');
const { startTlsServer } = require('../../support/tls-helpers');

// An upstream that accepts any upgrade (naming the token asked for, or another one on /mismatch)
// and then keeps answering HTTP/1.1 on the tunnel, as an h2c-capable backend keeps serving it.
async function acceptingUpstream() {
  const seen = [];
  const answer = (req) => JSON.stringify({ method: req.method, url: req.url, upgrade: req.headers.upgrade || null });
  const up = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, upgrade: req.headers.upgrade || null });
    req.resume();
    req.on('end', () => res.end(answer(req)));
  });
  up.on('upgrade', (req, socket) => {
    seen.push({ method: req.method, url: req.url, upgrade: req.headers.upgrade, tunnel: true });
    const named = req.url.includes('mismatch') ? 'h2c' : req.headers.upgrade;
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${named}\r\nConnection: Upgrade\r\n\r\n`);
    socket.on('data', (chunk) => {
      const line = String(chunk).split('\r\n')[0];
      seen.push({ inside: line });
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\ninside`);
    });
    socket.on('error', () => {});
  });
  const sockets = new Set();
  up.on('connection', (socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)); });
  up.stop = () => { up.close(); for (const socket of sockets) socket.destroy(); };
  up.listen(0, '127.0.0.1');
  await once(up, 'listening');
  up.url = `http://127.0.0.1:${up.address().port}`;
  up.seen = seen;
  return up;
}

// One request on a fresh connection; resolves with everything received until the server closes
// it (or until `untilText` appears: a tunnel stays open).
function exchange(port, text, untilText) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no close; got: ${received}`)); }, 5000);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (untilText && received.includes(untilText)) { clearTimeout(timer); socket.destroy(); resolve(received); }
    });
    socket.on('close', () => { clearTimeout(timer); resolve(received); });
    socket.on('error', () => {});
    socket.write(text);
  });
}

const KEY = crypto.randomBytes(16).toString('base64');
const wsHead = (method, path, extra = '') => `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${extra}\r\n`;

test('HTTP/1.1: only a valid WebSocket handshake is tunnelled by default; h2c is forwarded without the upgrade unless the rule opts in', async (t) => {
  const up = await acceptingUpstream();
  t.after(() => up.stop());
  const site = await startPipeline({
    config: {
      proxy: [
        { path: '/h2c/', upstreams: [up.url], upgradeProtocols: ['websocket', 'h2c'] },
        { path: '/api/', upstreams: [up.url] },
      ],
      nonStandardCodes: [{ url: '/api/admin', scode: 403 }],
    },
    asWorker: true,
  });
  t.after(() => site.stop());

  // h2c smuggling: the upgrade is not forwarded, the request is answered as an ordinary one and
  // the connection closes, so nothing can be sent past the access rules.
  const smuggle = await exchange(site.port, 'GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\nGET /api/admin HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(smuggle, /^HTTP\/1\.1 200 /);
  assert.doesNotMatch(smuggle, /101 Switching|inside/);
  assert.match(smuggle, /"upgrade":null/, 'the upstream saw no Upgrade header');
  assert.deepEqual(up.seen.splice(0), [{ method: 'GET', url: '/api/x', upgrade: null }], 'the request inside never reached the upstream');

  // The same with a body, by length or chunked: the body is on a socket the HTTP parser has let
  // go of and cannot be forwarded, so the request is refused and the upstream hears nothing.
  const h2cHead = (framing) => `POST /api/x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n${framing}\r\n\r\n`;
  const withLength = await exchange(site.port, `${h2cHead('Content-Length: 5')}hello`);
  assert.match(withLength, /^HTTP\/1\.1 400 /);
  const chunked = await exchange(site.port, `${h2cHead('Transfer-Encoding: chunked')}5\r\nhello\r\n0\r\n\r\n`);
  assert.match(chunked, /^HTTP\/1\.1 400 /);
  assert.deepEqual(up.seen.splice(0), [], 'the upstream received neither');

  // A rule that opts in tunnels h2c.
  const optedIn = await exchange(site.port, 'GET /h2c/x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\nGET /h2c/inner HTTP/1.1\r\nHost: x\r\n\r\n', 'inside');
  assert.match(optedIn, /^HTTP\/1\.1 101 /);
  assert.equal(up.seen.splice(0)[0].upgrade, 'h2c');

  // A valid WebSocket handshake is tunnelled.
  const valid = await exchange(site.port, wsHead('GET', '/api/ws', `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 13\r\n`) + 'GET /x HTTP/1.1\r\n\r\n', 'inside');
  assert.match(valid, /^HTTP\/1\.1 101 /);
  assert.equal(up.seen.splice(0)[0].upgrade, 'websocket');

  // Malformed handshakes are refused before the upstream hears of them.
  const noKey = await exchange(site.port, wsHead('GET', '/api/ws', 'Sec-WebSocket-Version: 13\r\n'));
  assert.match(noKey, /^HTTP\/1\.1 400 /);
  const shortKey = await exchange(site.port, wsHead('GET', '/api/ws', `Sec-WebSocket-Key: ${crypto.randomBytes(8).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n`));
  assert.match(shortKey, /^HTTP\/1\.1 400 /);
  const post = await exchange(site.port, wsHead('POST', '/api/ws', `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n`));
  assert.match(post, /^HTTP\/1\.1 400 /);
  const oldVersion = await exchange(site.port, wsHead('GET', '/api/ws', `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 8\r\n`));
  assert.match(oldVersion, /^HTTP\/1\.1 426 /);
  assert.match(oldVersion, /\r\nSec-WebSocket-Version: 13\r\n/i);
  assert.deepEqual(up.seen.splice(0), [], 'the upstream received none of them');

  // An upstream whose 101 names another protocol is not joined.
  const mismatch = await exchange(site.port, wsHead('GET', '/api/mismatch', `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 13\r\n`) + 'GET /api/admin HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(mismatch, /^HTTP\/1\.1 502 /);
  assert.doesNotMatch(mismatch, /inside/);
  assert.equal(up.seen.filter((entry) => entry.inside).length, 0);
  await site.waitForLog(/proxy: upgrade \/api\/mismatch -> .*: the upstream switched to "h2c", not "websocket"; answering 502/);
});

// Spawned: an HTTP/2 CONNECT reaches the pipeline through process/worker.js.
test('HTTP/2 extended CONNECT: only the rule\'s upgradeProtocols are tunnelled', async (t) => {
  const up = await acceptingUpstream();
  t.after(() => up.stop());
  const server = await startTlsServer({ config: { enableHTTP2: true, proxy: [{ path: '/api/', upstreams: [up.url] }] } });
  t.after(() => server.stop());
  const session = http2.connect(server.httpsUrl, { rejectUnauthorized: false });
  session.on('error', () => {});
  t.after(() => session.destroy());
  const open = async (protocol) => {
    const stream = session.request({ ':method': 'CONNECT', ':protocol': protocol, ':path': '/api/x', ':scheme': 'https', ':authority': `localhost:${server.sport}`, 'sec-websocket-version': '13' }, { endStream: false });
    const [headers] = await once(stream, 'response');
    stream.destroy();
    return headers[':status'];
  };
  assert.equal(await open('h2c'), 501);
  assert.equal(await open('foo'), 501);
  assert.deepEqual(up.seen.splice(0), []);
  assert.equal(await open('websocket'), 200);
  assert.equal(up.seen.splice(0)[0].upgrade, 'websocket');
});
