'use strict';
// The script timeout's list (lib/pipeline/scripting/timeout.js): one timer for all the requests
// a stage holds, entries linked through themselves, the oldest fired first.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createScriptTimeout } = require('../../lib/pipeline/scripting/timeout');

function entry(name, res = { headersSent: false, destroyed: false }) {
  return { name, res, deadline: 0, older: null, newer: null };
}

// Counts the timers made while fn runs.
function countTimers(fn) {
  const original = globalThis.setTimeout;
  let made = 0;
  globalThis.setTimeout = (...args) => { made++; return original(...args); };
  try {
    fn();
  } finally {
    globalThis.setTimeout = original;
  }
  return made;
}

test('1,000 requests armed and disarmed one after another make one timer, and leave nothing linked', () => {
  const fired = [];
  const timeout = createScriptTimeout(60000, (e) => fired.push(e.name));
  const entries = Array.from({ length: 1000 }, (_, i) => entry(i));
  const made = countTimers(() => {
    for (const e of entries) {
      timeout.arm(e);
      timeout.disarm(e);
    }
  });
  assert.equal(made, 1);
  assert.ok(entries.every((e) => e.older === null && e.newer === null && e.deadline === 0));
  assert.deepEqual(fired, []);
});

test('held requests time out oldest first; disarmed ones, started and destroyed responses do not', async () => {
  const fired = [];
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  const timeout = createScriptTimeout(50, (e) => {
    fired.push(e.name);
    if (e.name === 'last') done();
  });
  const first = entry('first');
  const answered = entry('answered');
  const started = entry('started', { headersSent: true, destroyed: false });
  const gone = entry('gone', { headersSent: false, destroyed: true });
  const middle = entry('middle');
  const last = entry('last');
  for (const e of [first, answered, started, gone, middle, last]) timeout.arm(e);
  timeout.disarm(answered); // unlinked from the middle of the list
  timeout.disarm(answered); // twice: nothing happens
  // The timer is unref'd (a server's sockets keep it alive): here an interval does.
  const alive = setInterval(() => {}, 1000);
  await finished.finally(() => clearInterval(alive));
  assert.deepEqual(fired, ['first', 'middle', 'last']);
});

test('scriptTimeout 0: arming does nothing', () => {
  const timeout = createScriptTimeout(0, () => assert.fail('no timeout'));
  const e = entry('x');
  assert.equal(countTimers(() => timeout.arm(e)), 0);
  assert.equal(e.deadline, 0);
});
