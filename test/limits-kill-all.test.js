'use strict';
// Attack report, finding 17: kill -9 of every worker closed the listening socket (Node's cluster
// closes a shared socket once no worker holds it): 272 ms of ECONNREFUSED. The primary now keeps
// a descriptor of each listening socket, so connections wait in the backlog until a replacement
// accepts them.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request, readyWorkerPids, isAlive } = require('./helpers');

test('kill -9 of every worker: the port keeps accepting, connections wait for the replacements', async () => {
  const server = await startServer({ files: { 'ok.txt': 'ok\n' }, args: ['--workers', '2'] });
  const failures = [];
  let ok = 0;
  let running = true;
  const probe = async () => {
    while (running) {
      try {
        const res = await request(`${server.url}/ok.txt`, { timeout: 10000 });
        if (res.status === 200) ok++; else failures.push(res.status);
      } catch (error) {
        failures.push(error.code || error.message);
      }
    }
  };
  const probes = [probe(), probe(), probe()];
  try {
    for (let round = 0; round < 3; round++) {
      const victims = readyWorkerPids(server).filter(isAlive);
      const since = server.stderr().length;
      for (const pid of victims) process.kill(pid, 'SIGKILL');
      // both replacements ready
      await server.waitForLog(/worker \d+ ready/, 'stderr', since);
      await server.waitForLog(/worker \d+ ready[\s\S]*/, 'stderr', server.stderr().findIndex((l, i) => i >= since && /worker \d+ ready/.test(l)) + 1);
      const before = ok;
      while (ok < before + 20) await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    running = false;
    await Promise.all(probes);
    await server.stop();
  }
  assert.ok(ok > 60, `probes answered (${ok})`);
  assert.deepEqual(failures.filter((f) => f === 'ECONNREFUSED'), [], 'no connection refused');
});
