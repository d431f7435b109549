'use strict';
// How many workers a config asks for. Its own file so that a worker (the status page) can use it
// without loading load.js, the schema and their helpers (~3 MiB of a worker's memory).
const os = require('node:os');

// workers: null means "one per CPU the process may use".
function workerCount(config) {
  if (config.workers !== null && config.workers !== undefined) return config.workers;
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length || 1;
}

module.exports = { workerCount };
