'use strict';
// A WebSocket (or any tunnel) opened as the first request of a connection stays up for as long as
// traffic flows: the request head ends the connection's "silent" state, and the established tunnel
// is then governed by the proxy's tunnelIdle alone, never by headersTimeout or keepAliveTimeout.
// headersTimeout and keepAliveTimeout are short here, so each tunnel outlives their sum in a
// short test; on all three transports (HTTP/1.1, HTTPS, HTTP/2 extended CONNECT), through the
// reverse proxy and into a mod that takes the upgrade itself.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const http2 = require('node:http2');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { startTlsServer } = require('../support/tls-helpers');

const HEADERS_TIMEOUT_MS = 700;
const KEEP_ALIVE_TIMEOUT_MS = 700;
const HOLD_MS = HEADERS_TIMEOUT_MS + KEEP_ALIVE_TIMEOUT_MS + 1000;
const PING_EVERY_MS = 200;
const TUNNEL_IDLE_MS = HOLD_MS;

// A mod that takes the upgrade itself: over HTTP/1.1 it writes its own 101 and echoes the raw
// bytes; over HTTP/2 (an extended CONNECT) it answers 200 on the stream and echoes on it.
const OWN_TUNNEL_MOD = String.raw`
module.exports = function (req, res, logFacilities, config, next) {
  if (!req.parsedURL.pathname.startsWith('/own/')) return next();
  if (req.method === 'CONNECT') {
    res.writeHead(200);
    req.on('data', (chunk) => res.write(chunk));
    req.on('end', () => res.end());
    return;
  }
  const socket = req.socket;
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  socket.on('data', (chunk) => socket.write(chunk));
  socket.on('end', () => socket.end());
  socket.on('error', () => {});
};
module.exports.modInfo = { name: 'own-tunnel', version: '1.0.0' };
`;

// An upstream that accepts a WebSocket upgrade and then echoes raw bytes.
async function echoUpstream() {
  const up = http.createServer((req, res) => res.end('no upgrade'));
  up.on('upgrade', (req, socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (chunk) => socket.write(chunk));
    socket.on('error', () => {});
  });
  up.listen(0, '127.0.0.1');
  await once(up, 'listening');
  return up;
}

// Sends "pingN" every PING_EVERY_MS for HOLD_MS on a duplex whose upgrade is done, and resolves
// with the echoes received and whether the tunnel closed before the end.
function holdWithTraffic(duplex) {
  return new Promise((resolve) => {
    let received = '';
    let closedEarly = false;
    let sent = 0;
    duplex.on('data', (chunk) => { received += chunk; });
    duplex.on('error', () => {});
    duplex.once('close', () => { closedEarly = true; });
    const timer = setInterval(() => { if (!closedEarly) duplex.write(`ping${sent++};`); }, PING_EVERY_MS);
    setTimeout(() => {
      clearInterval(timer);
      // the last ping's echo may still be on its way
      const finish = () => resolve({ sent, received, closedEarly });
      if (closedEarly || received.split(';').length - 1 >= sent) finish();
      else setTimeout(finish, 500);
    }, HOLD_MS);
  });
}

// HTTP/1.1 (plain or TLS): the upgrade request as the connection's first bytes, then the 101 head.
async function http1Tunnel(connect, path) {
  const socket = connect();
  await once(socket, socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect');
  const key = crypto.randomBytes(16).toString('base64');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  let head = '';
  while (!head.includes('\r\n\r\n')) {
    const [chunk] = await once(socket, 'data');
    head += chunk.toString('latin1');
  }
  assert.match(head, /^HTTP\/1\.1 101 /, `${path}: ${head}`);
  return socket;
}

async function http2Tunnel(server, path) {
  const session = http2.connect(server.httpsUrl, { rejectUnauthorized: false });
  session.on('error', () => {});
  const stream = session.request({ ':method': 'CONNECT', ':protocol': 'websocket', ':path': path, ':scheme': 'https', ':authority': `localhost:${server.sport}`, 'sec-websocket-version': '13' }, { endStream: false });
  const [headers] = await once(stream, 'response');
  assert.equal(headers[':status'], 200, path);
  stream.setEncoding('latin1');
  return { stream, session };
}

test('tunnels with traffic outlive headersTimeout + keepAliveTimeout on HTTP/1.1, HTTPS and HTTP/2, proxied or taken by a mod; silent ones end at tunnelIdle', async (t) => {
  const up = await echoUpstream();
  t.after(() => { up.close(); up.closeAllConnections(); });
  const server = await startTlsServer({
    config: {
      enableHTTP2: true,
      disableToHTTPSRedirect: true,
      headersTimeout: HEADERS_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      modsDirectory: 'mods',
      proxy: [
        { path: '/ws/', upstreams: [`http://127.0.0.1:${up.address().port}`] },
        { path: '/quiet/', upstreams: [`http://127.0.0.1:${up.address().port}`], timeouts: { tunnelIdle: TUNNEL_IDLE_MS } },
      ],
    },
    files: { 'index.html': 'home', '../mods/own-tunnel.js': OWN_TUNNEL_MOD },
  });
  const sessions = [];
  t.after(async () => { for (const s of sessions) s.destroy(); await server.stop(); });

  const plain = () => net.connect(server.port, '127.0.0.1');
  const secure = () => tls.connect({ port: server.sport, host: '127.0.0.1', servername: 'localhost', ALPNProtocols: ['http/1.1'], rejectUnauthorized: false });
  const tunnels = {
    'proxy over HTTP/1.1': () => http1Tunnel(plain, '/ws/a'),
    'proxy over HTTPS': () => http1Tunnel(secure, '/ws/b'),
    'proxy over HTTP/2': async () => { const { stream, session } = await http2Tunnel(server, '/ws/c'); sessions.push(session); return stream; },
    'mod over HTTP/1.1': () => http1Tunnel(plain, '/own/a'),
    'mod over HTTPS': () => http1Tunnel(secure, '/own/b'),
    'mod over HTTP/2': async () => { const { stream, session } = await http2Tunnel(server, '/own/c'); sessions.push(session); return stream; },
  };
  // Silent tunnels of a rule with a short tunnelIdle: closed by it, not before.
  const silent = {
    'silent over HTTP/1.1': async () => { const socket = await http1Tunnel(plain, '/quiet/a'); return [socket, 'close']; },
    'silent over HTTP/2': async () => { const { stream, session } = await http2Tunnel(server, '/quiet/b'); sessions.push(session); stream.resume(); return [stream, 'end']; },
  };
  const idleClosed = Promise.all(Object.entries(silent).map(async ([name, open]) => {
    const [duplex, closing] = await open();
    duplex.on('error', () => {});
    const openedAt = Date.now();
    await once(duplex, closing);
    duplex.destroy();
    return [name, Date.now() - openedAt];
  }));
  const results = await Promise.all(Object.entries(tunnels).map(async ([name, open]) => {
    const duplex = await open();
    const outcome = await holdWithTraffic(duplex);
    duplex.destroy();
    return [name, outcome];
  }));
  for (const [name, lasted] of await idleClosed) {
    assert.ok(lasted >= TUNNEL_IDLE_MS - 50, `${name}: closed after ${lasted} ms, before tunnelIdle (${TUNNEL_IDLE_MS} ms)`);
    assert.ok(lasted < TUNNEL_IDLE_MS + 5000, `${name}: still open ${lasted} ms after it fell silent`);
  }
  for (const [name, { sent, received, closedEarly }] of results) {
    assert.equal(closedEarly, false, `${name}: the tunnel was closed after ${received.split(';').length - 1} echoes`);
    assert.ok(sent >= 5, `${name}: ${sent} pings sent`);
    assert.equal(received, Array.from({ length: sent }, (_, i) => `ping${i};`).join(''), `${name}: every ping echoed`);
  }
});
