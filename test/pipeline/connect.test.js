'use strict';
// CONNECT enters the stage list (lib/pipeline/connect.js): without a proxy mod an HTTP/1 CONNECT
// gets a bare 501 and the connection closes; a blacklisted client gets 403 before anything is
// tunnelled. (test/svrjs-compat.test.js tunnels through a proxy mod; test/proxy.test.js carries
// WebSockets over HTTP/2 extended CONNECT.)

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startPipeline } = require('../support/pipeline');

// Sends raw bytes from a chosen source address; resolves with everything read until the close.
function exchange(port, text, from = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from }, () => socket.write(text));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => { received += chunk; });
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
}

test('CONNECT without a proxy mod: 501 and the connection closes; a blacklisted client: 403; both logged', async (t) => {
  const site = await startPipeline({ config: { blacklist: ['127.0.0.2'] }, files: { 'index.html': 'home' } });
  t.after(() => site.stop());
  const connect = 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n';
  assert.match(await exchange(site.port, connect), /^HTTP\/1\.1 501 Not Implemented\r\n/);
  assert.match(await exchange(site.port, connect, '127.0.0.2'), /^HTTP\/1\.1 403 /);
  await site.waitForLog(/"CONNECT example\.com:443 HTTP\/1\.1" 403 /, 'stdout');
  assert.ok(site.stdout().some((line) => /"CONNECT example\.com:443 HTTP\/1\.1" 501 /.test(line)));
});
