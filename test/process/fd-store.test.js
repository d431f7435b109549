'use strict';
// Listening sockets handed over by systemd ($LISTEN_FDS, lib/process/fd-store.js), as a restart
// under svr.service does with the sockets the previous primary left in the file descriptor store:
// the one the config names is served without binding again (a request that waited in its backlog
// before svr started is answered), and one it no longer names is closed. The store itself (a real
// systemctl restart) is tested in the booted guest (test/service.test.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { SVR, LineWatcher, getFreePort, makeTempDir, startServer, waitUntil } = require('../support/helpers');
const { storeName, keyOfName, takeStoredSockets } = require('../../lib/process/fd-store');

test('store names: the address key with ":" written as "_", and back', () => {
  for (const key of ['*:80', '127.0.0.1:8080', '[::1]:443', '[::]:80']) {
    assert.doesNotMatch(storeName(key), /:/, 'systemd separates $LISTEN_FDNAMES with ":"');
    assert.equal(keyOfName(storeName(key)), key);
  }
  assert.equal(keyOfName('other-service-socket'), null);
});

test('takeStoredSockets: only descriptors meant for this process; LISTEN_* leave the environment', () => {
  const env = { LISTEN_FDS: '1', LISTEN_PID: String(process.pid + 1), LISTEN_FDNAMES: storeName('*:80') };
  assert.equal(takeStoredSockets(env).sockets.size, 0, 'another process\'s descriptors are not taken');
  assert.deepEqual(env, {}, 'and the variables are gone, so workers never inherit them');
});

test('takeStoredSockets: a descriptor under another name is not svr\'s: left alone, and said so', () => {
  const env = { LISTEN_FDS: '1', LISTEN_PID: String(process.pid), LISTEN_FDNAMES: 'other-program' };
  const { sockets, unusable, problems } = takeStoredSockets(env);
  assert.equal(sockets.size, 0);
  assert.deepEqual(unusable, []);
  assert.match(problems[0], /descriptor 3 from systemd \(other-program\) is not one of svr's listening sockets: left alone/);
});

function listen(port) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1' }, () => resolve(server));
  });
}

// A raw request on a connection opened now; resolves with what comes back (or the error's code).
function rawGet(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    socket.on('data', (d) => { text += d; });
    socket.on('end', () => resolve(text));
    socket.on('error', (error) => resolve(error.code));
    socket.setTimeout(15000, () => { socket.destroy(); resolve('TIMEOUT'); });
  });
}

test('svr started with $LISTEN_FDS serves on the socket it was given and closes the one its config no longer names', async (t) => {
  const dir = makeTempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'web'));
  fs.writeFileSync(path.join(dir, 'web', 'index.html'), 'kept socket\n');
  const [port, oldPort] = [await getFreePort(), await getFreePort()];
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: `127.0.0.1:${port}`, wwwroot: 'web', workers: 1 }));

  const kept = await listen(port);
  const dropped = await listen(oldPort);
  // As systemd does: descriptors 3 and up, LISTEN_PID the svr process itself (sh execs node).
  const child = spawn('sh', ['-c', 'LISTEN_PID=$$ exec "$0" "$@"', process.execPath, SVR, '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe', kept._handle.fd, dropped._handle.fd],
    env: { ...process.env, LISTEN_FDS: '2', LISTEN_FDNAMES: [storeName(`127.0.0.1:${port}`), storeName(`127.0.0.1:${oldPort}`)].join(':') },
  });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  const err = new LineWatcher(child.stderr);
  // Only svr holds the sockets now; this connection waits in the backlog until a worker accepts.
  kept.close();
  dropped.close();
  const early = rawGet(port);

  await Promise.race([err.waitFor(/listening on http:\/\/127\.0\.0\.1:/),
    exited.then((code) => { throw new Error(`svr exited ${code}:\n${err.lines.join('\n')}`); })]);
  const answer = await early;
  assert.match(answer, /^HTTP\/1\.1 200 /, `the request sent before svr started is answered: ${answer}`);
  assert.match(answer, /kept socket/);
  assert.equal(await rawGet(oldPort), 'ECONNREFUSED', 'the socket of an address the config no longer names is closed');
  assert.ok(!err.lines.some((line) => /warn|error/.test(line)), err.lines.join('\n'));
});

test('a reload onto another port stores the new socket and takes the old one out of the store', async (t) => {
  const dir = makeTempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const record = path.join(dir, 'notified');
  fs.mkdirSync(path.join(dir, 'bin'));
  // A stand-in for systemd's systemd-notify: records its arguments.
  fs.writeFileSync(path.join(dir, 'bin', 'systemd-notify'), `#!/bin/sh\necho "$*" >> '${record}'\n`, { mode: 0o755 });
  const server = await startServer({ files: { 'index.html': 'x' }, env: { NOTIFY_SOCKET: '/run/fake-notify', PATH: `${path.join(dir, 'bin')}:${process.env.PATH}` } });
  t.after(() => server.stop());
  const newPort = await getFreePort();
  server.writeConfig({ port: newPort });
  const since = server.stderr().length;
  server.signal('SIGHUP');
  await server.waitForLog(/reload complete/, 'stderr', since);
  const lines = () => (fs.existsSync(record) ? fs.readFileSync(record, 'utf8').trim().split('\n') : []);
  const stored = `--fd=3 --fdname=${storeName(`*:${newPort}`)} FDSTORE=1`;
  assert.ok(await waitUntil(() => lines().includes(stored)), lines().join('\n'));
  assert.ok(lines().includes(`FDSTOREREMOVE=1 FDNAME=${storeName(`*:${server.port}`)}`), lines().join('\n'));
  assert.ok(lines().indexOf(`--fd=3 --fdname=${storeName(`*:${server.port}`)} FDSTORE=1`) >= 0, 'the first port was stored at start');
});
