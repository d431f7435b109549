'use strict';
// A cluster worker dies with its primary, stuck or not. When the primary is gone (kill -9, the
// OOM killer, a crash) a worker hears of it through its IPC channel's 'disconnect' and drains
// (worker.js); but a worker whose event loop spins in user code never runs that handler, and
// would keep a core and its sockets for ever where no cgroup kill follows (npm start, a
// container, another supervisor). So a small thread, which runs whatever the main thread does,
// watches the parent: once this process has been re-parented, it gives the drain ORPHAN_GRACE_MS
// and then sends the process SIGKILL.

const { Worker } = require('node:worker_threads');

const PARENT_CHECK_MS = 500;
// The 'disconnect' drain exits within about 1.5 s (1 s to finish requests, 0.5 s for the last
// metrics report); a worker still there a second later is stuck.
const ORPHAN_GRACE_MS = 2500;

// Runs in the thread. The message goes straight to descriptor 2: the thread's process.stderr
// is relayed by the main thread, which is the one that may be stuck.
const THREAD_SOURCE = `
'use strict';
const fs = require('node:fs');
const { workerData: { parent, checkMs, graceMs } } = require('node:worker_threads');
const timer = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(timer);
  setTimeout(() => {
    try {
      fs.writeSync(2, new Date().toISOString() + ' warn worker ' + process.pid + ': the primary (pid ' + parent + ') is gone and this worker did not exit within ' + graceMs + ' ms: killed\\n');
    } catch {}
    process.kill(process.pid, 'SIGKILL');
  }, graceMs);
}, checkMs);
`;

// Starts the thread; it keeps no process alive (unref). Returns it (tests stop it with terminate()).
function dieWithParent({ checkMs = PARENT_CHECK_MS, graceMs = ORPHAN_GRACE_MS } = {}) {
  const thread = new Worker(THREAD_SOURCE, { eval: true, workerData: { parent: process.ppid, checkMs, graceMs }, stdout: true, stderr: true });
  thread.unref();
  thread.on('error', () => {}); // without the thread the worker still drains on 'disconnect'
  return thread;
}

module.exports = { dieWithParent, PARENT_CHECK_MS, ORPHAN_GRACE_MS };
