'use strict';
// Runs wrk once and returns its figures, read from the JSON line wrk-report.lua prints.
const { spawn } = require('child_process');
const { pinned } = require('./pinning');
const path = require('path');

const REPORT_SCRIPT = path.join(__dirname, 'wrk-report.lua');

function wrkArgs({ url, headers, seconds, threads, connections }) {
  const headerArgs = Object.entries(headers || {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  return ['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', REPORT_SCRIPT, ...headerArgs, url];
}

function parseReport(stdout) {
  const line = stdout.split('\n').find((text) => text.startsWith('WRKJSON '));
  if (!line) return null;
  const report = JSON.parse(line.slice('WRKJSON '.length));
  const errors = Object.values(report.errors).reduce((sum, count) => sum + count, 0);
  // Cross-check with wrk's own summary line; the larger count wins.
  const nonOk = stdout.match(/Non-2xx or 3xx responses:\s+(\d+)/);
  const nonOkCount = nonOk ? Math.max(Number(nonOk[1]), report.errors.status) : report.errors.status;
  return {
    requests: report.requests,
    rps: report.duration_us > 0 ? report.requests / (report.duration_us / 1e6) : 0,
    bytesPerSecond: report.duration_us > 0 ? report.bytes / (report.duration_us / 1e6) : 0,
    latencyMs: { mean: report.latency_us.mean / 1000, p50: report.latency_us.p50 / 1000, p90: report.latency_us.p90 / 1000, p99: report.latency_us.p99 / 1000, max: report.latency_us.max / 1000 },
    errors: errors - report.errors.status + nonOkCount,
    errorDetail: { ...report.errors, status: nonOkCount },
  };
}

// pin: { taskset, core } runs the tool on that core only (the CPU-per-request rows).
function runWrk({ wrk, pin, ...request }) {
  return new Promise((resolve) => {
    const [command, args] = pinned(pin, wrk, wrkArgs(request));
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk) => (stdout += chunk));
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', (err) => resolve({ failure: `wrk did not run: ${err.message}` }));
    proc.on('close', (code) => {
      const report = code === 0 ? parseReport(stdout) : null;
      resolve(report || { failure: `wrk exited ${code}: ${(stderr || stdout).trim().split('\n').slice(-2).join(' ')}` });
    });
  });
}

module.exports = { runWrk, parseReport };
