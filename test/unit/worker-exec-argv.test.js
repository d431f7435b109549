'use strict';
// workerParallelScavenge: which Node options the primary starts a worker with.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const { workerExecArgv, NO_PARALLEL_SCAVENGE } = require('../../lib/process/worker-exec-argv');

test('"auto": no parallel scavenge when the workers fill the CPUs, as before when there are fewer', () => {
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: 'auto', workers: 2 }, [], 2), [NO_PARALLEL_SCAVENGE]);
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: 'auto', workers: 4 }, [], 2), [NO_PARALLEL_SCAVENGE]);
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: 'auto', workers: 1 }, [], 2), []);
  // workers: null is one per CPU svr may use, so it fills them
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: 'auto', workers: null }, []), [NO_PARALLEL_SCAVENGE]);
});

test('true and false decide whatever the count', () => {
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: true, workers: 8 }, [], 2), []);
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: false, workers: 1 }, [], 8), [NO_PARALLEL_SCAVENGE]);
});

test("the primary's own options are kept, and one that decides scavenging wins", () => {
  assert.deepEqual(workerExecArgv({ workerParallelScavenge: 'auto', workers: 2 }, ['--max-old-space-size=512'], 2), ['--max-old-space-size=512', NO_PARALLEL_SCAVENGE]);
  for (const given of ['--parallel-scavenge', '--no-parallel-scavenge', '--parallel_scavenge', '--single-threaded-gc', '--single-threaded']) {
    assert.deepEqual(workerExecArgv({ workerParallelScavenge: false, workers: 2 }, [given], 2), [given], given);
  }
});

test('this Node accepts the option (a removed V8 flag would stop every worker from starting)', () => {
  const run = spawnSync(process.execPath, [NO_PARALLEL_SCAVENGE, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, 'ok');
});
