'use strict';
// The static stage seen from a started svr.js, where the process is the point: no file descriptor
// left open in the worker (read from /proc) after 304s or aborted downloads, and an unreadable
// file is a 403, not a crash, with the server running unprivileged (as nobody when tests run as root).

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { startServer, request, readyWorkerPids, getFreePort, makeTempDir, writeFiles, spawnSvr, unprivilegedUser } = require('../../support/helpers');

const BIG = 32 * 1024 * 1024;

function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

// Polls a condition (not a fixed sleep): resolves when check() is true, or after timeoutMs with
// the last value so the caller's assertion reports it.
async function until(check, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value.ok || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// The descriptor count once it has stopped changing (sockets and files of earlier requests are
// closed asynchronously): the same reading over 200 ms of polling.
async function stableFdCount(pid) {
  let last = fdCount(pid);
  let since = Date.now();
  const deadline = Date.now() + 10000;
  while (Date.now() - since < 200 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const n = fdCount(pid);
    if (n !== last) { last = n; since = Date.now(); }
  }
  return last;
}

// Starts a download and destroys the connection as soon as the first body bytes arrive.
function abortedDownload(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve(res.statusCode);
      });
    });
    req.on('error', (err) => { if (err.code !== 'ECONNRESET') reject(err); });
  });
}

describe('file descriptors', { skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  let srv;
  let pid;
  before(async () => {
    srv = await startServer({ config: { workers: 1 }, files: { 'small.txt': 'small', 'big.bin': Buffer.alloc(BIG, 7) } });
    await srv.waitForLog(/worker \d+ ready/);
    [pid] = readyWorkerPids(srv);
  });
  after(() => srv.stop());

  it('1,000 conditional requests answered 304 leave no descriptor open', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const first = await request(`${srv.url}/small.txt`, { agent });
    assert.equal(first.status, 200);
    const headers = { 'If-None-Match': first.headers.etag };
    assert.equal((await request(`${srv.url}/small.txt`, { agent, headers })).status, 304);
    const before = await stableFdCount(pid);
    for (let i = 0; i < 1000; i++) {
      const res = await request(`${srv.url}/small.txt`, { agent, headers });
      assert.equal(res.status, 304);
    }
    const after = await until(() => { const n = fdCount(pid); return { ok: n <= before, n }; });
    agent.destroy();
    assert.ok(after.n <= before, `worker had ${before} descriptors before and ${after.n} after`);
  });

  it('100 aborted downloads of a large file leave no descriptor open', async () => {
    const full = await request(`${srv.url}/big.bin`);
    assert.equal(full.body.length, BIG);
    const before = await stableFdCount(pid);
    for (let i = 0; i < 100; i++) {
      assert.equal(await abortedDownload(`${srv.url}/big.bin`), 200);
    }
    const after = await until(() => { const n = fdCount(pid); return { ok: n <= before, n }; });
    assert.ok(after.n <= before, `worker had ${before} descriptors before and ${after.n} after`);
    // and it still serves
    assert.equal((await request(`${srv.url}/small.txt`)).text, 'small');
  });
});

describe('an unreadable file', () => {
  // Root bypasses mode 000, so as root the server runs as nobody; anyone else runs it as themselves.
  const unprivileged = unprivilegedUser();
  const skip = unprivileged.skip ?? false;
  let proc;
  let dir;
  let url;
  let out;

  before(async () => {
    if (skip) return;
    dir = makeTempDir();
    fs.chmodSync(dir, 0o755);
    const root = path.join(dir, 'web');
    fs.mkdirSync(root, { mode: 0o755 });
    writeFiles(root, { 'ok.txt': 'readable', 'locked.txt': 'nobody may read this', 'locked-dir/x.txt': 'hidden' });
    fs.chmodSync(path.join(root, 'ok.txt'), 0o644);
    fs.chmodSync(path.join(root, 'locked.txt'), 0o000);
    fs.chmodSync(path.join(root, 'locked-dir', 'x.txt'), 0o644);
    fs.chmodSync(path.join(root, 'locked-dir'), 0o000);
    const port = await getFreePort();
    const configFile = path.join(dir, 'svr-config.json');
    fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'web', workers: 1, enableDirectoryListing: true }), { mode: 0o644 });
    url = `http://127.0.0.1:${port}`;
    const child = spawnSvr(['--config', configFile], { ...unprivileged.user, cwd: os.tmpdir() });
    proc = child.proc;
    out = child;
    await Promise.race([
      child.err.waitFor(/listening on /),
      child.exited.then(() => { throw new Error(`svr exited:\n${child.err.lines.join('\n')}`); }),
    ]);
  });
  after(async () => {
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await out.exited;
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a mode-000 directory -> 403 for its listing and its files', { skip }, async () => {
    assert.equal((await request(`${url}/locked-dir/`)).status, 403);
    assert.equal((await request(`${url}/locked-dir/x.txt`)).status, 403);
    assert.equal((await request(`${url}/ok.txt`)).text, 'readable');
  });

  it('mode 000 -> 403, and the server keeps serving', { skip }, async () => {
    for (let i = 0; i < 3; i++) {
      const res = await request(`${url}/locked.txt`);
      assert.equal(res.status, 403);
      assert.ok(!res.text.includes('nobody may read this'));
    }
    assert.equal((await request(`${url}/ok.txt`)).text, 'readable');
    // the worker did not crash and get replaced
    assert.ok(!out.err.lines.some((line) => /exited|crash/i.test(line)), out.err.lines.join('\n'));
  });
});
