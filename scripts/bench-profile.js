#!/usr/bin/env node
'use strict';
// Where svr's CPU goes for one request kind: svr --single-threaded under `node --cpu-prof`, pinned
// to core 0, loaded by wrk (h2load for HTTP/2; 1 thread, 16 connections) pinned to core 1, then
// the profile's self time per function, as µs per request (the profile's samples over the load
// tool's request count). One scenario per svr row of the bench's CPU-per-request table; the docs'
// profile tables are regenerated with it. Needs wrk and taskset (h2load and openssl for the TLS rows).
//
//   node scripts/bench-profile.js [--scenario NAME] [--duration 5] [--top 25] [--svr PATH]
//        [--logging true|false] [--keep DIR]
//   NAME: html-1k, revalidate-304, js-100k (static files), ssjs-hello (a serverSideScript.js
//   answering Hello World!), proxy-1k (a `proxy` rule to a 1 KiB backend, a Node server on the load
//   tool's core), tls-html-1k (HTTPS, HTTP/1.1), h2-html-1k (HTTP/2; TLS 1.3 both)
//
// Prints the top functions by self time (µs per request and share), then the shares of a few
// groups: the access log, the static stage, Node's HTTP, the kernel's writev/read (the profile's
// "(program)" and native frames are Node's and the kernel's work it cannot attribute).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const minimist = require('minimist');
const { freePort, fetchOnce, startProcess, stopProcess } = require('./bench/processes');
const { runWrk } = require('./bench/wrk');
const { runH2load } = require('./bench/h2load');
const { createCertificate } = require('./bench/certificate');
const { HELLO_SCRIPT_BODY } = require('./bench/hello-work');

const args = minimist(process.argv.slice(2), { string: ['scenario', 'svr', 'keep', 'logging'], default: { scenario: 'html-1k', duration: 5, top: 25, logging: 'true' } });
const ROOT = path.join(__dirname, '..');
const PAGE = { file: 'bench-1k.html', size: 1024 };
const SCENARIOS = {
  'html-1k': { ...PAGE },
  'revalidate-304': { file: 'bench-100k.js', size: 100 * 1024, revalidate: true },
  'js-100k': { file: 'bench-100k.js', size: 100 * 1024 },
  'ssjs-hello': { path: '/', script: HELLO_SCRIPT_BODY },
  'proxy-1k': { path: '/item.json', proxy: true },
  'tls-html-1k': { ...PAGE, tls: true },
  'h2-html-1k': { ...PAGE, tls: true, h2: true },
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

// The backend of proxy-1k: 1 KiB of JSON for every request, on the load tool's core (its CPU is
// not svr's), keep-alive as Node's server does by default.
async function startBackend(dir) {
  const port = await freePort();
  const code = `const body = Buffer.alloc(1024, 'x'); require('http').createServer((q, r) => r.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 1024 }).end(body)).listen(${port}, '127.0.0.1');`;
  return {
    port,
    started: await startProcess({ command: 'taskset', args: ['-c', '1', process.execPath, '-e', code], cwd: dir, logFile: path.join(dir, 'backend.log'), readyUrl: `http://127.0.0.1:${port}/item.json` }),
  };
}

// The web root and the config of the scenario's site; the URL to load.
async function prepareSite(scenario, dir, port) {
  const www = path.join(dir, 'www');
  fs.mkdirSync(www, { recursive: true });
  if (scenario.file) fs.writeFileSync(path.join(www, scenario.file), Buffer.alloc(scenario.size, 'x'));
  if (scenario.script) fs.writeFileSync(path.join(www, 'serverSideScript.js'), scenario.script);
  const config = { port, wwwroot: 'www', enableLogging: args.logging !== 'false' };
  let backend = null;
  if (scenario.proxy) {
    backend = await startBackend(dir);
    config.proxy = [{ path: '/', upstreams: [`http://127.0.0.1:${backend.port}`] }];
  }
  if (scenario.tls) { // as the bench's TLS site (scripts/bench/servers.js)
    const { cert, key } = createCertificate('openssl', path.join(dir, 'certificate'));
    Object.assign(config, { sport: port, secure: true, cert, key, disableNonEncryptedServer: true, enableHTTP2: true, tlsMinVersion: 'TLSv1.3', http2MaxRequestsPerConnection: 0 });
  }
  const url = `${scenario.tls ? 'https' : 'http'}://127.0.0.1:${port}${scenario.path || `/${scenario.file}`}`;
  return { config, url, backend };
}

async function load(scenario, url, headers, seconds) {
  const pin = { taskset: 'taskset', core: 1 };
  const request = { url, headers, seconds, threads: 1, connections: 16 };
  return scenario.h2 ? runH2load({ h2load: 'h2load', pin, ...request }) : runWrk({ wrk: 'wrk', pin, ...request });
}

async function main() {
  const scenario = SCENARIOS[args.scenario];
  if (!scenario) throw new Error(`--scenario: one of ${Object.keys(SCENARIOS).join(', ')}`);
  const dir = args.keep ? path.resolve(args.keep) : fs.mkdtempSync(path.join(os.tmpdir(), 'svr-profile-'));
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const { config, url, backend } = await prepareSite(scenario, dir, port);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
  const profileDir = path.join(dir, 'profile');
  const svr = path.resolve(args.svr || path.join(ROOT, 'svr.js'));
  let run;
  try {
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
    try {
      const headers = scenario.revalidate ? { 'If-None-Match': (await fetchOnce(url)).headers.etag } : {};
      await load(scenario, url, headers, 1); // warm-up, in the profile too
      run = await load(scenario, url, headers, Number(args.duration));
    } finally {
      await stopProcess(started.proc);
    }
  } finally {
    if (backend) await stopProcess(backend.started.proc);
  }
  if (run.failure) throw new Error(run.failure);
  const file = fs.readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir} (svr did not exit cleanly?)`);
  const profile = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8'));
  // The warm-up's requests are in the profile too: add its share by its duration.
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
