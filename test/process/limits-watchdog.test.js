'use strict';
// A script stuck in a loop blocked its worker for good, and with one
// such request per worker the whole server, with nothing in the log. The primary now replaces a
// worker whose event loop has not answered for workerStallTimeout, and says which request was
// running and for how long.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request, readyWorkerPids, isAlive, waitUntil } = require('../support/helpers');

const SCRIPT = String.raw`
if (href === '/loop') { while (true) {} }
if (href === '/pid') { responseEnd(String(process.pid)); return; }
`;

const STALL_MS = 1000; // the smallest workerStallTimeout: each stuck worker spins for that long

test('a worker stuck in a loop is killed and replaced, and the log names the request', async () => {
  const server = await startServer({
    config: { workerStallTimeout: STALL_MS, useWebRootServerSideScript: true },
    files: { 'serverSideScript.js': SCRIPT, 'ok.txt': 'ok\n' },
    args: ['--workers', '2'],
  });
  try {
    const before = readyWorkerPids(server);
    assert.equal(before.length, 2);
    const since = server.stderr().length;
    const stuckAt = Date.now();
    // One stuck request per worker: before the fix, the server answered nothing from then on.
    const stuck = [request(`${server.url}/loop`, { timeout: 30000 }).catch((e) => e), request(`${server.url}/loop`, { timeout: 30000 }).catch((e) => e)];
    const line = await server.waitForLog(/worker \d+ stalled/, 'stderr', since, 20000);
    assert.match(line, /GET \/loop/);
    assert.match(line, /event loop has not answered for \d+ ms/);
    assert.match(line, /running for \d+ ms/);
    // Service is back within the stall timeout plus a replacement's start.
    let res;
    for (;;) {
      res = await request(`${server.url}/ok.txt`, { timeout: 20000 }).catch((e) => e);
      if (res.status === 200 || Date.now() - stuckAt > 20000) break;
    }
    assert.equal(res.status, 200);
    await Promise.all(stuck);
    // Each stalled worker was killed (both /loop requests may have landed on one worker: with
    // SCHED_NONE the kernel picks), and the pool is back to two workers that serve.
    const stalled = server.stderr().map((l) => /worker (\d+) stalled/.exec(l)).filter(Boolean).map((m) => Number(m[1]));
    assert.ok(stalled.length >= 1);
    for (const pid of stalled) {
      assert.ok(before.includes(pid) || readyWorkerPids(server).includes(pid));
      await waitUntil(() => !isAlive(pid), 5000);
      assert.ok(!isAlive(pid), `stuck worker ${pid} was killed`);
    }
    await waitUntil(() => readyWorkerPids(server).filter(isAlive).length === 2, 10000);
    assert.equal(readyWorkerPids(server).filter(isAlive).length, 2);
    const pid = await request(`${server.url}/pid`);
    assert.equal(pid.status, 200);
    assert.ok(!stalled.includes(Number(pid.text)));
  } finally {
    await server.stop();
  }
});

test('a busy but healthy worker is not killed (heartbeats keep coming while it serves)', async () => {
  // 2000, not the minimum 1000: with five test files sharing two cores, a healthy worker's
  // heartbeat was once starved for a second (a false stall, seen at load ~6).
  const server = await startServer({
    config: { workerStallTimeout: 2000 },
    files: { 'ok.txt': 'ok\n' },
  });
  try {
    const [pid] = readyWorkerPids(server);
    const until = Date.now() + 4500; // more than twice the stall timeout, bounded
    let served = 0;
    while (Date.now() < until) {
      const res = await request(`${server.url}/ok.txt`);
      assert.equal(res.status, 200);
      served++;
    }
    assert.ok(served > 10);
    assert.ok(isAlive(pid));
    assert.ok(!server.stderr().some((l) => /stalled/.test(l)), server.stderr().join('\n'));
  } finally {
    await server.stop();
  }
});

test('workerStallTimeout is validated', async () => {
  const { runSvr, makeTempDir } = require('../support/helpers');
  const fs = require('node:fs');
  const path = require('node:path');
  const dir = makeTempDir();
  try {
    const file = path.join(dir, 'svr-config.json');
    fs.writeFileSync(file, JSON.stringify({ workerStallTimeout: 5 }));
    const result = await runSvr(['--config', file, '--check']);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr + result.stdout, /workerStallTimeout: expected 0 \(off\) or an integer >= 1000, found 5/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
