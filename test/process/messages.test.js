'use strict';
// A real worker process (process/worker.js runClusterWorker) dispatches from the message table:
// a message of unknown type is logged once and ignored, and the worker keeps listening to the
// channel (test/unit/messages.test.js checks the table and the dispatcher without processes).

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');

const WORKER = path.join(__dirname, '..', '..', 'lib', 'process', 'worker.js');

test('a worker logs an unknown message type once, ignores it, and still obeys the table after', async (t) => {
  const child = fork('-e', [`require(${JSON.stringify(WORKER)}).runClusterWorker()`], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  for (let i = 0; i < 3; i++) child.send({ type: 'launch-missiles' });
  child.send({ type: 'reopen-logs' }); // known: handled, no warning
  // Before any config there is nothing to drain. A worker without a primary has nothing to serve:
  // it exits 0 once the channel closes behind the messages above (read in order before the close).
  const exited = once(child, 'exit');
  child.send({ type: 'drain', idleGraceMs: 0, timeoutMs: 10 }, () => child.disconnect());
  const [code] = await exited;
  assert.equal(code, 0);
  const warnings = stderr.split('\n').filter((line) => /ignored a message/.test(line));
  assert.equal(warnings.length, 1, stderr);
  assert.match(warnings[0], /unknown type "launch-missiles"/);
});
