'use strict';
// Runs ApacheBench (ab, Debian's apache2-utils) once: the SVR.JS blog's own method for its
// workload, `ab -c 5 -t 10`, HTTP/1.0 with a new connection for every request. Returns the same
// figures as wrk.js: requests, rps, bytes/s, latency (ab's percentiles, in ms) and errors
// (failed requests and non-2xx answers).
const { spawn } = require('child_process');
const { pinned } = require('./pinning');

const MANY = 100000000; // -t alone stops ab at 50,000 requests; the time limit is what ends the run

function abArgs({ url, headers, seconds, connections }) {
  const headerArgs = Object.entries(headers || {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  // -t before -n: -t sets the request count to 50,000, -n after it lifts that
  return ['-q', '-c', String(connections), '-t', String(seconds), '-n', String(MANY), ...headerArgs, url];
}

function field(stdout, label) {
  const match = stdout.match(new RegExp(`^${label}:\\s+([\\d.]+)`, 'm'));
  return match ? Number(match[1]) : null;
}

function percentile(stdout, p) {
  const match = stdout.match(new RegExp(`^\\s+${p}%\\s+(\\d+)`, 'm'));
  return match ? Number(match[1]) : null;
}

function parseAb(stdout) {
  const requests = field(stdout, 'Complete requests');
  const seconds = field(stdout, 'Time taken for tests');
  const rps = field(stdout, 'Requests per second');
  if (requests === null || seconds === null || rps === null) return null;
  const failed = field(stdout, 'Failed requests') || 0;
  const non2xx = field(stdout, 'Non-2xx responses') || 0;
  const transferred = field(stdout, 'Total transferred') || 0;
  return {
    requests,
    rps,
    bytesPerSecond: seconds > 0 ? transferred / seconds : 0,
    latencyMs: { mean: field(stdout, 'Time per request'), p50: percentile(stdout, 50), p90: percentile(stdout, 90), p99: percentile(stdout, 99), max: percentile(stdout, 100) },
    errors: failed + non2xx,
    errorDetail: { failed, status: non2xx },
  };
}

function runAb({ ab, pin, ...request }) {
  return new Promise((resolve) => {
    const [command, args] = pinned(pin, ab, abArgs(request));
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk) => (stdout += chunk));
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', (err) => resolve({ failure: `ab did not run: ${err.message}` }));
    proc.on('close', (code) => {
      const report = code === 0 ? parseAb(stdout) : null;
      resolve(report || { failure: `ab exited ${code}: ${(stderr || stdout).trim().split('\n').slice(-2).join(' ')}` });
    });
  });
}

module.exports = { runAb, parseAb, abArgs };
