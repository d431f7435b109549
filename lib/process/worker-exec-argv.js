'use strict';
// The Node options a worker starts with: the primary's own, plus --no-parallel-scavenge when the
// workers fill the CPUs (workerParallelScavenge, default "auto").
//
// Why: V8 runs each young-generation collection (a scavenge, every few MB a request allocates) on
// the worker's main thread and up to four helper threads, handing work over through futexes. When
// every CPU already runs a worker, the helpers take their time from the other workers, and the
// hand-offs cost more than the collection they share: on the blog workload (2 workers, 2 CPUs,
// about 17 MB of BigInts per request, two scavenges a request) svr served more requests per second
// with them off (docs/performance.md). Concurrent marking of the old generation, which keeps major
// pauses short on a large heap, is not touched.
const os = require('node:os');
const { workerCount } = require('../config/worker-count');

const NO_PARALLEL_SCAVENGE = '--no-parallel-scavenge';
// Options that already decide it: the user's command line wins.
const DECIDED = /^--(no-)?(parallel[-_]scavenge|single[-_]threaded[-_]gc|single[-_]threaded)$/;

function availableCpus() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length || 1;
}

// Whether the workers scavenge on helper threads: the setting, or for "auto" whether there are
// fewer workers than CPUs this process may use (its affinity mask: a pinned svr counts its pins).
function parallelScavenge(config, cpus = availableCpus()) {
  const setting = config.workerParallelScavenge;
  if (setting === true || setting === false) return setting;
  return workerCount(config) < cpus;
}

function workerExecArgv(config, execArgv = process.execArgv, cpus = availableCpus()) {
  if (execArgv.some((option) => DECIDED.test(option))) return execArgv;
  return parallelScavenge(config, cpus) ? execArgv : [...execArgv, NO_PARALLEL_SCAVENGE];
}

module.exports = { workerExecArgv, parallelScavenge, NO_PARALLEL_SCAVENGE };
