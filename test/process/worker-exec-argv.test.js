'use strict';
// workerParallelScavenge end to end: the option is on the running workers' command lines, and a
// reload starts the replacements with the new setting.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startServer, readyWorkerPids } = require('../support/helpers');
const { NO_PARALLEL_SCAVENGE } = require('../../lib/process/worker-exec-argv');

function nodeOptionsOf(pid) {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
}

test('the workers start with --no-parallel-scavenge when told to, and without it after a reload to true', async () => {
  const server = await startServer({ config: { workers: 2, workerParallelScavenge: false } });
  try {
    const first = readyWorkerPids(server);
    assert.equal(first.length, 2);
    for (const pid of first) assert.ok(nodeOptionsOf(pid).includes(NO_PARALLEL_SCAVENGE), `worker ${pid}: ${nodeOptionsOf(pid).join(' ')}`);
    server.writeConfig({ workers: 2, workerParallelScavenge: true });
    const since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    const replacements = readyWorkerPids(server).filter((pid) => !first.includes(pid));
    assert.equal(replacements.length, 2);
    for (const pid of replacements) assert.ok(!nodeOptionsOf(pid).includes(NO_PARALLEL_SCAVENGE), `worker ${pid}: ${nodeOptionsOf(pid).join(' ')}`);
  } finally {
    await server.stop();
  }
});
