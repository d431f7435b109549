'use strict';
// svr reload / svr check / readiness outside systemd: the control socket answers with the outcome of
// the reload, start-up failures exit with the statuses the unit's RestartPreventExitStatus= lists,
// and the primary says READY=1 through systemd-notify once every worker listens.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startServer, runSvr, makeTempDir, getFreePort, request } = require('../support/helpers');

const UNIT = fs.readFileSync(path.join(__dirname, '..', '..', 'systemd', 'svr.service'), 'utf8');

test('svr reload: ok and exit 0 with a good config, the errors and exit 1 with a refused one; the old config keeps serving', async () => {
  const dir = makeTempDir();
  const socket = path.join(dir, 'control.sock');
  const server = await startServer({ files: { 'index.html': 'first' }, args: ['--control-socket', socket], config: { workers: 2 } });
  try {
    const good = await runSvr(['reload', '--control-socket', socket]);
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /^svr reload: reload complete: 2 worker\(s\) replaced by 2 in \d+ ms$/);

    server.writeConfig({ workers: 2, port: 'eighty' });
    const bad = await runSvr(['reload', '--control-socket', socket]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^svr reload: reload failed, still serving with the previous config:\n {2}.*svr-config\.json: port: expected a port \(0 to 65535\).*, found "eighty"$/);
    assert.equal((await request(`${server.url}/`)).text, 'first', 'the previous config serves');

    server.writeConfig({ workers: 2, enableDirectoryListing: true });
    assert.equal((await runSvr(['reload', '--control-socket', socket])).code, 0);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(fs.existsSync(socket), false, 'the primary removes its socket when it exits');
});

test('svr reload with no svr running says so and exits 1; an unknown command on the socket gets an answer', async () => {
  const dir = makeTempDir();
  try {
    const missing = await runSvr(['reload', '--control-socket', path.join(dir, 'none.sock')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /svr reload: svr is not running, or not with a control socket at .*none\.sock/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const socketDir = makeTempDir();
  const socket = path.join(socketDir, 'control.sock');
  const server = await startServer({ args: ['--control-socket', socket] });
  try {
    const answer = await new Promise((resolve, reject) => {
      let text = '';
      const client = net.connect(socket, () => client.write('format-disk\n'));
      client.setEncoding('utf8').on('data', (d) => { text += d; }).on('end', () => resolve(text)).on('error', reject);
    });
    assert.deepEqual(JSON.parse(answer), { ok: false, message: 'unknown command "format-disk"' });
  } finally {
    await server.stop();
    fs.rmSync(socketDir, { recursive: true, force: true });
  }
});

test('a second svr with the same control socket does not take it from the first', async () => {
  const dir = makeTempDir();
  const socket = path.join(dir, 'control.sock');
  const first = await startServer({ args: ['--control-socket', socket] });
  const second = await startServer({ args: ['--control-socket', socket] });
  try {
    await second.waitForLog(/another svr is running and answers there/);
    const r = await runSvr(['reload', '--control-socket', socket]);
    assert.equal(r.code, 0);
    await first.waitForLog(/control socket: reload/);
  } finally {
    await second.stop();
    await first.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('start-up failures no restart can fix exit 78 (refused config) or 69 (cannot listen), the statuses the unit does not restart', async () => {
  const dir = makeTempDir();
  const configFile = path.join(dir, 'svr-config.json');
  fs.mkdirSync(path.join(dir, 'web')); // a web root of its own: one holding the config is refused
  try {
    fs.writeFileSync(configFile, JSON.stringify({ port: 'eighty', wwwroot: 'web' }));
    assert.equal((await runSvr(['--config', configFile])).code, 78);
    fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), wwwroot: 'no-such-dir', workers: 1 }));
    assert.equal((await runSvr(['--config', configFile])).code, 78, 'a missing web root');
    const blocker = net.createServer();
    const port = await getFreePort();
    await new Promise((resolve) => blocker.listen(port, resolve));
    fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'web', workers: 1 }));
    const taken = await runSvr(['--config', configFile]);
    blocker.close();
    assert.equal(taken.code, 69, taken.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.match(UNIT, /^RestartPreventExitStatus=69 78$/m);
  assert.match(UNIT, /^Restart=on-failure$/m, 'a crash still restarts');
});

test('readiness: the listening socket goes to the file descriptor store, then systemd-notify --ready runs once every worker listens; workers do not inherit NOTIFY_SOCKET', async () => {
  const dir = makeTempDir();
  const record = path.join(dir, 'notified');
  // A stand-in for systemd's systemd-notify: records its arguments and the socket it was given.
  fs.mkdirSync(path.join(dir, 'bin'));
  // What it was given as descriptor 3 is recorded too (the file descriptor store's socket).
  fs.writeFileSync(path.join(dir, 'bin', 'systemd-notify'), `#!/bin/sh\nfd3=\ncase "$1" in --fd=3) fd3=$(readlink /proc/$$/fd/3) ;; esac\necho "$NOTIFY_SOCKET $*\${fd3:+ (3: $fd3)}" >> '${record}'\n`, { mode: 0o755 });
  const script = 'if (req.url === "/env") { disableEndElseCallbackExecute = true; res.end(String(process.env.NOTIFY_SOCKET)); }';
  const server = await startServer({
    files: { 'serverSideScript.js': script },
    config: { workers: 2 },
    env: { NOTIFY_SOCKET: '/run/fake-notify', PATH: `${path.join(dir, 'bin')}:${process.env.PATH}` },
  });
  try {
    await server.waitForLog(/listening on /);
    const ready = () => fs.existsSync(record) && fs.readFileSync(record, 'utf8');
    // The banner is logged just before systemd-notify runs: poll the record it writes.
    for (const deadline = Date.now() + 10000; !/--ready/.test(ready()) && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    const lines = ready().trim().split('\n');
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0], new RegExp(`^/run/fake-notify --fd=3 --fdname=svr-listen-\\*_${server.port} FDSTORE=1 \\(3: socket:\\[\\d+\\]\\)$`));
    assert.match(lines[1], /^\/run\/fake-notify --ready --status=svr \S+ listening on http:\/\/\S+ \(2 workers, primary pid \d+\)$/);
    assert.equal((await request(`${server.url}/env`)).text, 'undefined', 'user code in a worker does not see NOTIFY_SOCKET');
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('svr check as a user who may not read the config: who may, and how to run it', { skip: process.getuid?.() !== 0 && 'needs root to run as nobody' }, async () => {
  const dir = makeTempDir();
  fs.chmodSync(dir, 0o755);
  const configFile = path.join(dir, 'svr-config.json');
  fs.mkdirSync(path.join(dir, 'web')); // a web root of its own: one holding the config is refused
  fs.writeFileSync(configFile, JSON.stringify({ port: 8080, wwwroot: 'web' }), { mode: 0o640 });
  try {
    const r = await runSvr(['check', '--config', configFile], { uid: 65534, gid: 65534 });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `${configFile}: permission denied: the config is readable only by its owner root and the group root ` +
      `(mode 640; it may hold password hashes).\nRun the check as root: sudo svr check --config ${configFile}`);
    assert.equal((await runSvr(['check', '--config', configFile])).code, 0, 'root may');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--single-threaded exits with the same statuses: 78 for a refused config, 69 for a port in use', async () => {
  const dir = makeTempDir();
  const configFile = path.join(dir, 'svr-config.json');
  fs.mkdirSync(path.join(dir, 'web')); // a web root of its own: one holding the config is refused
  const blocker = net.createServer();
  try {
    fs.writeFileSync(configFile, JSON.stringify({ port: 'eighty', wwwroot: 'web' }));
    assert.equal((await runSvr(['--single-threaded', '--config', configFile])).code, 78);
    const port = await getFreePort();
    await new Promise((resolve) => blocker.listen(port, resolve));
    fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'web' }));
    const taken = await runSvr(['--single-threaded', '--config', configFile]);
    assert.equal(taken.code, 69, taken.stderr);
  } finally {
    blocker.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
