'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runSvr, startServer, request, getFreePort, spawnSvr, SVR } = require('../support/helpers');
const { version } = require('../../package.json');

test('--version prints the product, version, OS and Node version', async () => {
  const { code, stdout } = await runSvr(['--version']);
  assert.equal(code, 0);
  assert.equal(stdout.trim(), `svr/${version} (Linux; Node.js/${process.version})`);
});

test('--help prints the usage and exits 0', async () => {
  const { code, stdout } = await runSvr(['--help']);
  assert.equal(code, 0);
  assert.match(stdout, /--single-threaded/);
  assert.match(stdout, /--check/);
});

test('an unknown option is an error that names it', async () => {
  const { code, stderr } = await runSvr(['--wrokers', '3']);
  assert.equal(code, 1);
  assert.match(stderr, /unknown option --wrokers/);
});

test('a bad --port value is an error that names the option and the value', async () => {
  const { code, stderr } = await runSvr(['--port', 'eighty']);
  assert.equal(code, 1);
  assert.match(stderr, /--port expects an integer from 0 to 65535, found "eighty"/);
});

test('--port overrides the config port', async () => {
  const port = await getFreePort();
  const server = await startServer({ files: { 'index.html': 'hello' }, args: ['--port', String(port)] });
  try {
    assert.notEqual(port, server.port);
    const res = await request(`http://127.0.0.1:${port}/`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'hello');
  } finally {
    await server.stop();
  }
});

test('--single-threaded serves without a cluster and stops cleanly', async () => {
  const server = await startServer({ files: { 'index.html': 'single' }, args: ['--single-threaded'] });
  try {
    assert.match(server.stderr().join('\n'), /single-threaded, pid \d+/);
    assert.doesNotMatch(server.stderr().join('\n'), /worker \d+ ready/);
    const res = await request(`${server.url}/`);
    assert.equal(res.text, 'single');
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('the shipped default config serves web/index.html (what `npm start` runs)', async () => {
  const port = await getFreePort();
  const child = spawnSvr(['--port', String(port), '--workers', '1']);
  try {
    await child.err.waitFor(/listening on http:\/\/(?:\[::\]|0\.0\.0\.0):\d+/);
    const res = await request(`http://127.0.0.1:${port}/`);
    assert.equal(res.status, 200);
    assert.equal(res.text, fs.readFileSync(path.join(path.dirname(SVR), 'web', 'index.html'), 'utf8'));
  } finally {
    child.proc.kill('SIGTERM');
    assert.equal((await child.exited).code, 0);
  }
});

test('npm start is `node svr.js` on the embedded default config', () => {
  const pkg = require('../../package.json');
  assert.equal(pkg.scripts.start, 'node svr.js');
  const shipped = JSON.parse(fs.readFileSync(path.join(path.dirname(SVR), 'config', 'svr-config.json'), 'utf8'));
  assert.equal(shipped.port, 8080);
});
