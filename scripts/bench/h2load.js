'use strict';
// Runs h2load (nghttp2-client) once for the HTTP/2 rows and returns the same figures as wrk.js:
// requests, rps, bytes/s, latency (h2load prints mean and max per request, no percentiles) and
// errors (failed + errored + timeout + non-2xx/3xx).
const { spawn } = require('child_process');
const { pinned } = require('./pinning');

function h2loadArgs({ url, headers, seconds, threads, connections }) {
  const headerArgs = Object.entries(headers || {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  // -m 1: one stream at a time per connection, like a wrk connection's one request at a time
  return ['-c', String(connections), '-t', String(threads), '-m', '1', '-D', String(seconds), ...headerArgs, url];
}

const UNIT_MS = { us: 0.001, ms: 1, s: 1000 };

function toMs(text) {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text || '');
  return match ? Number(match[1]) * UNIT_MS[match[2]] : null;
}

function parseH2load(stdout) {
  const finished = stdout.match(/finished in ([\d.]+)s, ([\d.]+) req\/s, /);
  const counts = stdout.match(/requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/);
  const status = stdout.match(/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/);
  const traffic = stdout.match(/traffic: [\d.]+\w*B \((\d+)\) total/);
  const timing = stdout.match(/time for request:\s+(\S+)\s+(\S+)\s+(\S+)/);
  if (!finished || !counts || !status) return null;
  const seconds = Number(finished[1]);
  const [failed, errored, timeout] = [counts[5], counts[6], counts[7]].map(Number);
  const non2xx3xx = Number(status[3]) + Number(status[4]);
  return {
    requests: Number(counts[3]),
    rps: Number(finished[2]),
    bytesPerSecond: traffic && seconds > 0 ? Number(traffic[1]) / seconds : 0,
    latencyMs: { mean: timing ? toMs(timing[3]) : null, p50: null, p90: null, p99: null, max: timing ? toMs(timing[2]) : null },
    errors: failed + errored + timeout + non2xx3xx,
    errorDetail: { failed, errored, timeout, status: non2xx3xx },
  };
}

// h2load (nghttp2 1.52) now and then goes on sending requests after its -D duration and never
// exits (seen against svr and a bare Node server alike): a run that outlasts its duration by
// OVERRUN_GRACE_MS is killed and reported as failed, so the bench goes on.
const OVERRUN_GRACE_MS = 15000;

// pin: { taskset, core } runs the tool on that core only (the CPU-per-request rows).
function runH2load({ h2load, pin, graceMs = OVERRUN_GRACE_MS, ...request }) {
  return new Promise((resolve) => {
    const [command, args] = pinned(pin, h2load, h2loadArgs(request));
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let overran = false;
    const guard = setTimeout(() => { overran = true; proc.kill('SIGKILL'); }, request.seconds * 1000 + graceMs);
    proc.stdout.on('data', (chunk) => (stdout += chunk));
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', (err) => { clearTimeout(guard); resolve({ failure: `h2load did not run: ${err.message}` }); });
    proc.on('close', (code) => {
      clearTimeout(guard);
      if (overran) return resolve({ failure: `h2load ran ${graceMs} ms past its ${request.seconds} s and was killed` });
      const report = code === 0 ? parseH2load(stdout) : null;
      return resolve(report || { failure: `h2load exited ${code}: ${(stderr || stdout).trim().split('\n').slice(-2).join(' ')}` });
    });
  });
}

module.exports = { runH2load, parseH2load, h2loadArgs };
