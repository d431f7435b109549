'use strict';
// The access log's own CPU per request, in every logFormat, under each Node version the CPU rows
// run: scripts/bench-access-log.js (the log's per-request work in a loop, the loop alone taken
// off) in a child process pinned to the server's core. Run in complete runs (no --only), with the
// CPU rows; the targets table holds it to 2 µs per format.
const path = require('path');
const { execFileSync } = require('child_process');
const { pinned } = require('./pinning');
const { SERVER_CORE } = require('./cpu-per-request');

const SCRIPT = path.join(__dirname, '..', 'bench-access-log.js');
const TIMEOUT_MS = 120000; // the script takes seconds; a stuck one fails its row, not the bench

// { rows: [{ nodeVersion, formats: { combined: { nsPerRequest, range }, json: ... } }] }, or null
// when the run leaves it out; a Node version whose run failed has `failure` instead of `formats`.
// nodes(): the Node versions of the CPU rows ([{ binary, version }]), asked only when it runs.
function measureAccessLogCost({ options, tools, log }, nodes) {
  if (!options.cpuPerRequest || options.only.length) return null;
  const rows = nodes().map((node) => {
    const [command, args] = pinned(tools.taskset ? { taskset: tools.taskset, core: SERVER_CORE } : undefined, node.binary, [SCRIPT, '--json']);
    try {
      const { formats } = JSON.parse(execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: TIMEOUT_MS, killSignal: 'SIGKILL' }));
      log(`  access log (node ${node.version}): ${Object.entries(formats).map(([name, cost]) => `${name} ${(cost.nsPerRequest / 1000).toFixed(2)} µs`).join(', ')} per request`);
      return { nodeVersion: node.version, formats };
    } catch (err) {
      return { nodeVersion: node.version, failure: String(err.message).split('\n')[0] };
    }
  });
  return { rows };
}

module.exports = { measureAccessLogCost };
