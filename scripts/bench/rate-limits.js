'use strict';
// `npm run bench -- ratelimit`: what a rate limit costs per request. One svr serves the same
// 1 KiB file under /limited/ (a rateLimits rule so high it never refuses, so every request is
// counted by the primary) and under /plain/ (no rule); wrk runs against each in turn (--runs
// times, alternating), and the CPU time of every svr process (primary and workers, from
// /proc/PID/stat) over each run is divided by the requests answered. Prints the medians of
// CPU microseconds per request and requests/s, and the ratio limited / plain. Options:
// --duration S --runs N --connections N --workers N (default: available cores).
// With --refused the limited route refuses (rate 1): what a client over its limit costs. With
// --exact the rule has burst 5 (rate 100,000): no bucket ever has tokens to lend, so every
// limited request is one question to the primary, as for a client near its limit (wrk's bursts
// go over 5 at once, so most of them are refused).
const fs = require('fs');
const os = require('os');
const path = require('path');
const minimist = require('minimist');
const { ensureTools, ROOT } = require('./tools');
const { freePort, startProcess, stopProcess, killAllStarted } = require('./processes');
const { runWrk } = require('./wrk');

const HOST = '127.0.0.1';
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function cpuTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

function svrPids(primary) {
  const children = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === primary;
    } catch {
      return false;
    }
  });
  return [primary, ...children];
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function runRateLimitBench(argv, log = (line) => process.stderr.write(`${line}\n`)) {
  const args = minimist(argv, { boolean: ['refused', 'exact'], default: { duration: 5, runs: 3, connections: 32, workers: 0, warmup: 2 } });
  const workers = Number(args.workers) || (os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const tools = ensureTools({ install: true }, log);
  if (!tools.wrk) throw new Error('the rate-limit bench needs wrk (apt-get install wrk)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-ratelimit-'));
  process.on('exit', () => { killAllStarted(); fs.rmSync(dir, { recursive: true, force: true }); });
  for (const route of ['limited', 'plain']) {
    fs.mkdirSync(path.join(dir, 'web', route), { recursive: true });
    fs.writeFileSync(path.join(dir, 'web', route, 'item.json'), 'x'.repeat(1024));
  }
  const port = await freePort();
  let limit = { path: '/limited/', rate: 1000000, burst: 1000000 };
  if (args.refused) limit = { path: '/limited/', rate: 1, burst: 1 };
  if (args.exact) limit = { path: '/limited/', rate: 100000, burst: 5 };
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'web', workers, enableLogging: true, rateLimits: [limit] }, null, 2));
  const svr = await startProcess({ command: process.execPath, args: [path.join(ROOT, 'svr.js'), '--config', configFile], cwd: dir, logFile: path.join(dir, 'svr.log'), readyUrl: `http://${HOST}:${port}/plain/item.json` });
  const pids = svrPids(svr.proc.pid);
  const request = (route, seconds) => ({ wrk: tools.wrk, url: `http://${HOST}:${port}/${route}/item.json`, seconds, threads: 1, connections: Number(args.connections) });
  const results = { limited: [], plain: [] };
  log(`rate-limit bench: ${args.runs} x ${args.duration}s, ${args.connections} connections, ${workers} workers, ${args.refused ? 'every limited request refused' : args.exact ? 'every limited request asks the primary' : 'no limited request refused'}, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const route of Object.keys(results)) if (args.warmup > 0) await runWrk(request(route, Number(args.warmup)));
  for (let round = 0; round < Number(args.runs); round++) {
    for (const route of Object.keys(results)) {
      const before = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);
      const run = await runWrk(request(route, Number(args.duration)));
      const ticks = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0) - before;
      if (run.failure) throw new Error(`${route}: ${run.failure}`);
      const cpuUs = (ticks / TICKS_PER_SECOND) * 1e6 / run.requests;
      results[route].push({ rps: run.rps, cpuUs, errors: run.errors });
      log(`  ${route} run ${round + 1}: ${Math.round(run.rps)} req/s, ${cpuUs.toFixed(1)} µs CPU/request, ${run.errors} non-2xx/errors`);
    }
  }
  const summary = Object.fromEntries(Object.entries(results).map(([route, runs]) => [route, {
    rps: Math.round(median(runs.map((r) => r.rps))), cpuUs: Number(median(runs.map((r) => r.cpuUs)).toFixed(1)),
  }]));
  const ratio = summary.limited.cpuUs / summary.plain.cpuUs;
  console.log(`rate limits (1 KiB static file, ${workers} workers, ${args.connections} connections, access log on${args.refused ? ', limited route refusing' : ''}${args.exact ? ', no leases' : ''})`);
  console.log(`  limited  ${summary.limited.rps} req/s  ${summary.limited.cpuUs} µs CPU/request (svr's processes)`);
  console.log(`  plain    ${summary.plain.rps} req/s  ${summary.plain.cpuUs} µs CPU/request`);
  console.log(`  CPU per request limited/plain ${ratio.toFixed(2)}; load average at end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  await stopProcess(svr.proc);
  return { summary, ratio };
}

module.exports = { runRateLimitBench };
