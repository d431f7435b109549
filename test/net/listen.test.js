'use strict';
// Listen addresses in `port`/`sport` as SVR.JS 3.9+ reads them: a port, "ADDRESS:PORT",
// "[IPv6]:PORT" and a Unix socket path; the start banner names what was really bound.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { startServer, request, getFreePort, makeTempDir } = require('../support/helpers');
const { parseListenAddress } = require('../../lib/config/listen-address');

test('the forms a listen address takes', () => {
  assert.deepEqual(parseListenAddress(8080), { port: 8080 });
  assert.deepEqual(parseListenAddress('8080'), { port: 8080 });
  assert.deepEqual(parseListenAddress('127.0.0.1:8080'), { port: 8080, host: '127.0.0.1' });
  assert.deepEqual(parseListenAddress('[::1]:8443'), { port: 8443, host: '::1' });
  assert.deepEqual(parseListenAddress('/run/svr/http.sock'), { path: '/run/svr/http.sock' });
  for (const bad of ['eighty', '::1:80', '[127.0.0.1]:80', '127.0.0.1:70000', 'example.com:80', 70000]) {
    assert.ok(parseListenAddress(bad).error, String(bad));
  }
});

test('"127.0.0.1:PORT" listens on that address only, and the banner says so', async () => {
  const port = await getFreePort();
  const server = await startServer({ config: { port: `127.0.0.1:${port}` }, files: { 'index.html': 'home' } });
  try {
    assert.match(server.stderr().join('\n'), new RegExp(`listening on http://127\\.0\\.0\\.1:${port} \\(`));
    assert.equal((await request(`http://127.0.0.1:${port}/`)).text, 'home');
    await assert.rejects(request(`http://127.0.0.2:${port}/`), { code: 'ECONNREFUSED' });
  } finally {
    await server.stop();
  }
});

test('a Unix socket path: served there, a stale socket file removed first', async () => {
  const dir = makeTempDir('svr-sock-');
  const socketPath = path.join(dir, 'http.sock');
  // a socket file left behind by a process that died without closing it
  const stale = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.exit(0))`]);
  assert.equal(stale.status, 0);
  assert.ok(fs.lstatSync(socketPath).isSocket());
  const server = await startServer({ config: { port: socketPath }, files: { 'index.html': 'over a socket' } });
  try {
    assert.match(server.stderr().join('\n'), new RegExp(`listening on http\\+unix:${socketPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(`));
    const text = await new Promise((resolve, reject) => {
      http.get({ socketPath, path: '/' }, (res) => {
        let body = '';
        res.on('data', (c) => { body += c; });
        res.on('end', () => resolve(body));
      }).on('error', reject);
    });
    assert.equal(text, 'over a socket');
    const st = fs.statSync(socketPath);
    assert.equal(st.uid, process.getuid(), 'owned by the user svr runs as');
    assert.equal(st.mode & 0o777, 0o777 & ~process.umask(), 'mode from the umask');
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
