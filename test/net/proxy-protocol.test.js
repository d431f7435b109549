'use strict';
// PROXY protocol v1 and v2 on svr's listeners, over raw sockets: the client address in the header
// reaches the access log and scripts (req.socket.remoteAddress); a connection without the header,
// or from outside trustedProxies, is closed; HTTPS listeners take it too. The plain-HTTP sites run
// in-process behind the listeners a worker builds (support/pipeline.js, asWorker: lib/net's own
// servers).

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { Duplex } = require('node:stream');
const { getFreePort } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');
const { startTlsPipeline } = require('../support/tls-helpers');
const { parseProxyHeader } = require('../../lib/net/proxy-protocol');

const SCRIPT = "if (href === '/who') { res.end(req.socket.remoteAddress + ' ' + req.socket.remotePort); return; }";
const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

function v2Header(command, client) {
  if (command === 'LOCAL') return Buffer.concat([SIGNATURE, Buffer.from([0x20, 0x00, 0, 0])]);
  const payload = Buffer.alloc(12);
  client.address.split('.').forEach((byte, i) => { payload[i] = Number(byte); });
  payload.set([127, 0, 0, 1], 4);
  payload.writeUInt16BE(client.port, 8);
  payload.writeUInt16BE(80, 10);
  return Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11, 0, 12]), payload]);
}

// Sends `bytes` then reads until the server closes; resolves with the text.
async function exchange(port, bytes) {
  const socket = net.connect(port, '127.0.0.1');
  const chunks = [];
  socket.on('data', (c) => chunks.push(c));
  socket.on('error', () => {}); // a reset is how a refused connection ends
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await once(socket, 'connect');
  for (const part of [].concat(bytes)) socket.write(part);
  await closed;
  return Buffer.concat(chunks).toString();
}

const GET_WHO = 'GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

test('PROXY protocol on the HTTP listener', async (t) => {
  const server = await startPipeline({
    config: { acceptProxyProtocol: { http: true }, trustedProxies: ['127.0.0.0/8'] },
    files: { 'serverSideScript.js': SCRIPT, 'index.html': 'home' },
    asWorker: true,
  });
  t.after(() => server.stop());

  await t.test('v1: the client address reaches scripts and the access log', async () => {
    const since = server.stdout().length;
    const text = await exchange(server.port, `PROXY TCP4 203.0.113.7 127.0.0.1 40001 80\r\n${GET_WHO}`);
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\r\n\r\n203\.0\.113\.7 40001$/);
    await server.waitForLog(/^203\.0\.113\.7 - - .*"GET \/who HTTP\/1\.1" 200/, 'stdout', since);
  });

  await t.test('v1 TCP6, split across writes', async () => {
    const text = await exchange(server.port, ['PROXY TCP6 2001:db8::9 ::1 4', `0002 80\r\nGET /who HTTP/1.1\r\nHost: x\r\n`, 'Connection: close\r\n\r\n']);
    assert.match(text, /\r\n\r\n2001:db8::9 40002$/);
  });

  await t.test('v2 PROXY and v2 LOCAL (a balancer health check keeps its own address)', async () => {
    let text = await exchange(server.port, Buffer.concat([v2Header('PROXY', { address: '198.51.100.23', port: 50000 }), Buffer.from(GET_WHO)]));
    assert.match(text, /\r\n\r\n198\.51\.100\.23 50000$/);
    text = await exchange(server.port, Buffer.concat([v2Header('LOCAL'), Buffer.from(GET_WHO)]));
    assert.match(text, /\r\n\r\n(::ffff:)?127\.0\.0\.1 \d+$/);
  });

  await t.test('keep-alive: later requests on the connection keep the client address', async () => {
    const text = await exchange(server.port, `PROXY TCP4 203.0.113.8 127.0.0.1 40003 80\r\nGET /who HTTP/1.1\r\nHost: x\r\n\r\n${GET_WHO}`);
    assert.equal(text.match(/203\.0\.113\.8 40003/g).length, 2);
  });

  await t.test('a connection without the header is closed unanswered', async () => {
    const since = server.stderr().length;
    assert.equal(await exchange(server.port, GET_WHO), '');
    await server.waitForLog(/PROXY protocol: connection from 127\.0\.0\.1 closed: no PROXY header/, 'stderr', since);
    assert.equal(await exchange(server.port, 'PROXY TCP4 999.1.1.1 127.0.0.1 1 80\r\n'), '');
  });
});

test('PROXY protocol: a peer outside trustedProxies is refused', async (t) => {
  const server = await startPipeline({ config: { acceptProxyProtocol: true, trustedProxies: ['10.0.0.0/8'] }, files: { 'index.html': 'home' }, asWorker: true });
  t.after(() => server.stop());
  const since = server.stderr().length;
  assert.equal(await exchange(server.port, `PROXY TCP4 203.0.113.7 127.0.0.1 40001 80\r\n${GET_WHO}`), '');
  await server.waitForLog(/not in trustedProxies: closed/, 'stderr', since);
});

// One HTTP/1.1 request over TLS after a PROXY v1 line. together: the line and the ClientHello in
// one TCP write (so one read on the server, as a balancer may send them); else the line first.
async function whoOverTls(sport, { together }) {
  const line = Buffer.from('PROXY TCP4 192.0.2.44 127.0.0.1 41000 443\r\n');
  const raw = net.connect(sport, '127.0.0.1');
  await once(raw, 'connect');
  let transport = raw;
  if (together) {
    let first = true;
    transport = new Duplex({
      write(chunk, encoding, callback) {
        raw.write(first ? Buffer.concat([line, chunk]) : chunk, callback);
        first = false;
      },
      read() {},
    });
    raw.on('data', (chunk) => transport.push(chunk));
    raw.on('end', () => transport.push(null));
  } else {
    raw.write(line);
  }
  const socket = tls.connect({ socket: transport, rejectUnauthorized: false, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
  const failed = new Promise((resolve, reject) => socket.once('error', reject));
  await Promise.race([once(socket, 'secureConnect'), failed]);
  const chunks = [];
  socket.on('data', (c) => chunks.push(c));
  socket.write(GET_WHO);
  await Promise.race([once(socket, 'end'), failed]);
  return Buffer.concat(chunks).toString();
}

test('PROXY protocol on the HTTPS listener (HTTP/2 enabled): the TLS socket carries the client address', async (t) => {
  const server = await startTlsPipeline({
    config: { enableHTTP2: true, acceptProxyProtocol: { https: true }, trustedProxies: ['127.0.0.1'] },
    files: { 'serverSideScript.js': SCRIPT },
  });
  t.after(() => server.stop());
  assert.match(await whoOverTls(server.sport, { together: false }), /\r\n\r\n192\.0\.2\.44 41000$/);
  // The ClientHello in the same read as the header: the handshake used to stall (the bytes after
  // the header were flushed from the socket's buffer before the TLS layer took them).
  assert.match(await whoOverTls(server.sport, { together: true }), /\r\n\r\n192\.0\.2\.44 41000$/);
  // Plain HTTP stays without PROXY protocol.
  assert.match(await exchange(server.port, GET_WHO), /^HTTP\/1\.1 30[18] /);
});

test('config: acceptProxyProtocol needs trustedProxies; a bad upstream URL names its key', async () => {
  const { runSvr, makeTempDir } = require('../support/helpers');
  const dir = makeTempDir();
  const file = require('node:path').join(dir, 'svr-config.json');
  require('node:fs').writeFileSync(file, JSON.stringify({ wwwroot: '.', acceptProxyProtocol: true, proxy: [{ upstreams: ['ftp://x'] }] }));
  const result = await runSvr(['--check', '--config', file]);
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /acceptProxyProtocol: needs trustedProxies/);
  require('node:fs').writeFileSync(file, JSON.stringify({ wwwroot: '.', trustedProxies: ['10.0.0.0/8', '999.1.1.1'], acceptProxyProtocol: { http: 'yes' } }));
  const second = await runSvr(['--check', '--config', file]);
  assert.match(second.stderr, /trustedProxies\[1\]: expected an IP address or CIDR block such as "10\.0\.0\.0\/8", found "999\.1\.1\.1": not an IP address/);
  assert.match(second.stderr, /acceptProxyProtocol\.http: expected true or false, found "yes"/);
  assert.match(result.stderr, /proxy\[0\]\.upstreams\[0\]: expected an upstream URL/);
});

test('parseProxyHeader: partial, v2 IPv6, oversized and malformed headers', () => {
  assert.deepEqual(parseProxyHeader(Buffer.from('PROX')), { done: false });
  assert.deepEqual(parseProxyHeader(SIGNATURE.subarray(0, 7)), { done: false });
  const v6 = Buffer.alloc(52);
  SIGNATURE.copy(v6);
  v6.set([0x21, 0x21, 0, 36], 12);
  v6.set([0x20, 0x01, 0x0d, 0xb8], 16);
  v6[31] = 1;
  v6.writeUInt16BE(443, 48);
  assert.deepEqual(parseProxyHeader(v6).client, { address: '2001:db8::1', port: 443, family: 'IPv6' });
  assert.match(parseProxyHeader(Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`)).error, /longer than 107/);
  assert.match(parseProxyHeader(Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 99999 80\r\n')).error, /malformed/);
  const huge = Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11, 0xff, 0xff])]);
  assert.match(parseProxyHeader(huge).error, /at most/);
});

// nginx's stream module with `proxy_protocol on` in front of svr (the docs' nginx example).
const STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';
function ensureNginxStream() {
  const { ensureDebianPackage, aptInstall } = require('../support/helpers');
  const nginx = ensureDebianPackage('nginx');
  if (nginx.skip) return nginx;
  if (!require('node:fs').existsSync(STREAM_MODULE)) {
    if (process.getuid() !== 0) return { skip: 'nginx stream module missing and installing libnginx-mod-stream needs root' };
    aptInstall('libnginx-mod-stream');
    if (!require('node:fs').existsSync(STREAM_MODULE)) return { skip: 'apt-get install libnginx-mod-stream failed' };
  }
  return nginx;
}

const nginxStream = ensureNginxStream();
test('nginx stream with proxy_protocol on in front of svr: the client address and port come through', { skip: nginxStream.skip }, async (t) => {
  const fs = require('node:fs');
  const path = require('node:path');
  const { spawn } = require('node:child_process');
  const server = await startPipeline({
    config: { acceptProxyProtocol: { http: true }, trustedProxies: ['127.0.0.1'] },
    files: { 'serverSideScript.js': SCRIPT },
    asWorker: true,
  });
  t.after(() => server.stop());
  const front = await getFreePort();
  const conf = path.join(server.dir, 'nginx.conf');
  // master_process off: one nginx process, so the SIGKILL below leaves no worker behind (with a
  // master, its workers outlived the test, listening).
  fs.writeFileSync(conf, `load_module ${STREAM_MODULE};
daemon off;
master_process off;
pid ${server.dir}/nginx.pid;
error_log ${server.dir}/nginx-error.log warn;
events { worker_connections 64; }
stream { server { listen 127.0.0.1:${front}; proxy_pass 127.0.0.1:${server.port}; proxy_protocol on; } }
`);
  const nginx = spawn(nginxStream.path, ['-p', server.dir, '-c', conf], { stdio: 'ignore' });
  t.after(() => nginx.kill('SIGKILL'));
  // nginx prints nothing once it listens: try to connect, at most 200 times 25 ms apart.
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((resolve) => {
      const probe = net.connect(front, '127.0.0.1', () => { probe.destroy(); resolve(true); });
      probe.on('error', () => resolve(false));
    });
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const socket = net.connect(front, '127.0.0.1');
  await once(socket, 'connect');
  const clientPort = socket.localPort; // nginx's own connection to svr has another port
  const chunks = [];
  socket.on('data', (c) => chunks.push(c));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(GET_WHO);
  await closed;
  assert.match(Buffer.concat(chunks).toString(), new RegExp(`\\r\\n\\r\\n127\\.0\\.0\\.1 ${clientPort}$`));
});
