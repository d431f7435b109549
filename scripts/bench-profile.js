#!/usr/bin/env node
'use strict';
// Where svr's CPU goes for one request kind: svr --single-threaded under `node --cpu-prof`, pinned
// to core 0, loaded by wrk (1 thread, 16 connections) pinned to core 1, then the profile's
// self time per function, as µs per request (the profile's samples over wrk's request count).
// The docs' profile tables are regenerated with it. Needs wrk and taskset.
//
//   node scripts/bench-profile.js [--scenario html-1k|revalidate-304|js-100k] [--duration 5]
//        [--top 25] [--svr PATH] [--logging true|false] [--keep DIR]
//
// Prints the top functions by self time (µs per request and share), then the shares of a few
// groups: the access log, the static stage, Node's HTTP, the kernel's writev/read (the profile's
// "(program)" and native frames are Node's and the kernel's work it cannot attribute).

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const minimist = require('minimist');
const { freePort, fetchOnce, startProcess, stopProcess } = require('./bench/processes');
const { runWrk } = require('./bench/wrk');

const args = minimist(process.argv.slice(2), { string: ['scenario', 'svr', 'keep', 'logging'], default: { scenario: 'html-1k', duration: 5, top: 25, logging: 'true' } });
const ROOT = path.join(__dirname, '..');
const SCENARIOS = {
  'html-1k': { file: 'bench-1k.html', size: 1024, revalidate: false },
  'revalidate-304': { file: 'bench-100k.js', size: 100 * 1024, revalidate: true },
  'js-100k': { file: 'bench-100k.js', size: 100 * 1024, revalidate: false },
};

// Which part of svr (or Node) a profile node belongs to, by its script.
function groupOf(url) {
  if (!url) return 'native / (program)';
  if (url.includes('/lib/access-log.js')) return 'access log';
  if (url.includes('/lib/pipeline/static/')) return 'static stage';
  if (url.includes('/lib/pipeline/')) return 'other pipeline stages';
  if (url.includes('/lib/')) return 'svr: net, process, http helpers';
  if (url.startsWith('node:')) return "Node's own JavaScript (http, net, streams, fs)";
  return 'other';
}

function summarise(profile, requests) {
  const interval = new Map();
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map(nodes.map((node) => [node.id, node]));
  for (let i = 0; i < samples.length; i++) interval.set(samples[i], (interval.get(samples[i]) || 0) + (timeDeltas[i] || 0));
  const perFunction = new Map();
  const perGroup = new Map();
  let total = 0;
  for (const [id, us] of interval) {
    const { callFrame } = byId.get(id);
    const key = `${callFrame.functionName || '(anonymous)'} ${callFrame.url ? `${path.relative(ROOT, callFrame.url.replace(/^file:\/\//, ''))}:${callFrame.lineNumber + 1}` : ''}`.trim();
    perFunction.set(key, (perFunction.get(key) || 0) + us);
    const group = callFrame.functionName === '(idle)' ? 'idle' : groupOf(callFrame.url);
    perGroup.set(group, (perGroup.get(group) || 0) + us);
    if (callFrame.functionName !== '(idle)') total += us;
  }
  const line = ([name, us]) => `${(us / requests).toFixed(2).padStart(7)} µs  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${name}`;
  const sorted = (map) => [...map].filter(([name]) => !name.startsWith('(idle)') && name !== 'idle').sort((a, b) => b[1] - a[1]);
  return [
    `busy time: ${(total / requests).toFixed(2)} µs per request (${requests} requests)`,
    '',
    'by part:',
    ...sorted(perGroup).map(line),
    '',
    `top ${args.top} functions by self time:`,
    ...sorted(perFunction).slice(0, Number(args.top)).map(line),
  ].join('\n');
}

async function main() {
  const scenario = SCENARIOS[args.scenario];
  if (!scenario) throw new Error(`--scenario: one of ${Object.keys(SCENARIOS).join(', ')}`);
  const dir = args.keep ? path.resolve(args.keep) : fs.mkdtempSync(path.join(os.tmpdir(), 'svr-profile-'));
  fs.mkdirSync(path.join(dir, 'www'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'www', scenario.file), Buffer.alloc(scenario.size, 'x'));
  const port = await freePort();
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'www', enableLogging: args.logging !== 'false' }));
  const profileDir = path.join(dir, 'profile');
  const svr = path.resolve(args.svr || path.join(ROOT, 'svr.js'));
  const url = `http://127.0.0.1:${port}/${scenario.file}`;
  const started = await startProcess({
    command: 'taskset',
    args: ['-c', '0', process.execPath, '--cpu-prof', '--cpu-prof-dir', profileDir, svr, '--single-threaded', '--config', configFile],
    cwd: dir,
    // The file was written a moment ago, and the file cache reads a file again on every request
    // until it has been unchanged for 2 s (file-cache.js): the profile would show reads that a
    // site whose files are older never makes.
    env: { SVR_FILE_CACHE_SETTLE_MS: '0' },
    logFile: path.join(dir, 'svr.log'),
    readyUrl: url,
  });
  let run;
  try {
    const headers = scenario.revalidate ? { 'If-None-Match': (await fetchOnce(url)).headers.etag } : {};
    const pin = { taskset: 'taskset', core: 1 };
    await runWrk({ wrk: 'wrk', pin, url, headers, seconds: 1, threads: 1, connections: 16 }); // warm-up, in the profile too
    run = await runWrk({ wrk: 'wrk', pin, url, headers, seconds: Number(args.duration), threads: 1, connections: 16 });
  } finally {
    await stopProcess(started.proc);
  }
  if (run.failure) throw new Error(run.failure);
  const file = fs.readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir} (svr did not exit cleanly?)`);
  const profile = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8'));
  // The warm-up's requests are in the profile too: count them from the access log when it is on,
  // else add the warm-up's share by its duration.
  const requests = Math.round(run.requests * (1 + 1 / Number(args.duration)));
  const node = spawnSync(process.execPath, ['--version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`svr ${args.scenario}, --single-threaded, node ${node}, enableLogging ${args.logging}; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  console.log(summarise(profile, requests));
  if (args.keep) console.log(`\nprofile: ${path.join(profileDir, file)}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(`bench-profile: ${error.message}`);
  process.exit(1);
});
