#!/usr/bin/env node
'use strict';
// Benchmark (not a test): the bytes a script request allocates and promotes in the worker's
// JavaScript heap, svr against the bare cluster (scripts/bench/bare-cluster.js), on the hello
// script and on the SVR.JS blog's /fibonacci?n=20000. Bytes, not time: the figures do not depend
// on the machine's load, so they can be compared between checkouts on a shared machine.
//
//   node scripts/bench-alloc.js [--workload hello,fib] [--requests N] [--connections C] [--svr PATH]
//     [--config JSON]  keys to add to svr's config, e.g. '{"enableLogging":false}'
//     [--each]         also print each collection of the window: its kind, KB allocated before it,
//                      KB it promoted
//     [--sites N]      also print the N sites (function file:line < its callers) that allocated
//                      the most, in bytes per request, from V8's sampling heap profiler (slower);
//     [--kept]         with --sites, only what was still in the heap at the end
// NODE_OPTIONS reaches the servers too (e.g. --max-semi-space-size=2: a small young generation).
//
// Each server runs one worker with scripts/bench/alloc-probe.js preloaded. A keep-alive client
// sends warm-up requests (the JIT settles), then the probe starts counting (after two full
// collections), then N requests (C at a time; default 1: one request in the worker at a time, so
// each figure is what one request costs), then the probe stops. Printed per request: KB allocated,
// KB promoted (moved into the old generation by a scavenge: what stayed alive across two), and
// scavenges. svr runs as the bench runs it (access log on, to /dev/null here), from --svr (another
// checkout's svr.js) or this one.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const net = require('node:net');
const { spawn } = require('node:child_process');
const minimist = require('minimist');
const { FIB_PATH, FIB_SCRIPT_BODY, FIB_EXPECTED_BODY } = require('./bench/fib-work');
const { HELLO_SCRIPT_BODY, HELLO_EXPECTED_BODY } = require('./bench/hello-work');

const PROBE = path.join(__dirname, 'bench', 'alloc-probe.js');
const HOST = '127.0.0.1';

const WORKLOADS = {
  hello: { path: '/', script: HELLO_SCRIPT_BODY, expected: HELLO_EXPECTED_BODY, requests: 5000, warmUp: 3000 },
  fib: { path: FIB_PATH, script: FIB_SCRIPT_BODY, expected: FIB_EXPECTED_BODY, requests: 300, warmUp: 200 },
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function get(agent, port, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: HOST, port, path: urlPath, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
}

// count requests, `connections` at a time; each answer is checked.
async function load(agent, port, workload, count, connections) {
  let sent = 0;
  const lane = async () => {
    while (sent < count) {
      sent++;
      const res = await get(agent, port, workload.path);
      if (res.status !== 200 || res.body !== workload.expected) throw new Error(`GET ${workload.path}: ${res.status} ${res.body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, lane));
}

// Resolves once a connection to the port is accepted (the server listens).
async function listening(port, proc) {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}) before listening`);
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, HOST, () => { socket.destroy(); resolve(true); });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitForFile(file) {
  while (!fs.existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 20));
}

function startServer(kind, workload, options, dir) {
  const nodeOptions = [process.env.NODE_OPTIONS, options.nodeOptions, `--require ${PROBE}`].filter(Boolean).join(' ');
  const env = { ...process.env, SVR_ALLOC_PROBE_DIR: dir, SVR_ALLOC_PROBE_SITES: options.sites > 0 ? (options.kept ? 'kept' : 'all') : '', NODE_OPTIONS: nodeOptions };
  if (kind === 'bare cluster') {
    return spawn(process.execPath, [path.join(__dirname, 'bench', 'bare-cluster.js'), '--host', HOST, '--port', String(options.port), '--workers', '1', '--workload', workload.name], { env, stdio: 'ignore' });
  }
  const site = path.join(dir, 'web');
  fs.mkdirSync(site);
  fs.writeFileSync(path.join(site, 'serverSideScript.js'), workload.script);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: options.port, wwwroot: site, workers: 1, enableLogging: true, ...options.config }));
  return spawn(process.execPath, [options.svr, '--config', configFile], { env, stdio: 'ignore', cwd: dir });
}

// One server's figures: kind 'svr' or 'bare cluster'; workload: a WORKLOADS entry with its name;
// options: { svr, connections, requests?, sites?, kept?, config?, nodeOptions? }.
async function measure(kind, workload, options) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-alloc-'));
  const port = await freePort();
  const proc = startServer(kind, workload, { ...options, port }, dir);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  try {
    await listening(port, proc);
    await load(agent, port, workload, workload.warmUp, options.connections);
    const worker = fs.readdirSync(dir).find((name) => name.endsWith('.worker'));
    if (!worker) throw new Error(`${kind}: no worker loaded the probe (${PROBE})`);
    const pid = Number(worker.split('.')[0]);
    process.kill(pid, 'SIGUSR2');
    await waitForFile(path.join(dir, `${pid}.started`));
    await load(agent, port, workload, options.requests ?? workload.requests, options.connections);
    process.kill(pid, 'SIGUSR2');
    const result = path.join(dir, `${pid}.json`);
    await waitForFile(result);
    const figures = JSON.parse(fs.readFileSync(result, 'utf8'));
    if (options.sites > 0) {
      const sites = path.join(dir, `${pid}.sites.json`);
      await waitForFile(sites);
      figures.sites = JSON.parse(fs.readFileSync(sites, 'utf8')).slice(0, options.sites);
    }
    return figures;
  } finally {
    agent.destroy();
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await new Promise((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once('exit', resolve)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const argv = minimist(process.argv.slice(2), { string: ['workload', 'svr', 'config'], boolean: ['kept', 'each'], default: { workload: 'hello,fib', connections: 1 } });
  const options = {
    svr: path.resolve(argv.svr || path.join(__dirname, '..', 'svr.js')),
    connections: Number(argv.connections),
    requests: argv.requests === undefined ? undefined : Number(argv.requests),
    sites: Number(argv.sites) || 0,
    kept: Boolean(argv.kept),
    each: Boolean(argv.each),
    config: argv.config ? JSON.parse(argv.config) : {},
  };
  console.log(`Node ${process.version}, svr ${options.svr}${argv.config ? ` with ${argv.config}` : ''}, ${options.connections} connection(s)`);
  console.log('workload  server         requests  allocated KB/req  promoted KB/req  scavenges/req  collections');
  for (const name of String(argv.workload).split(',')) {
    if (!WORKLOADS[name]) throw new Error(`--workload: ${Object.keys(WORKLOADS).join(', ')}`);
    const workload = { name, ...WORKLOADS[name] };
    for (const kind of ['bare cluster', 'svr']) {
      const requests = options.requests ?? workload.requests;
      const r = await measure(kind, workload, options);
      const per = (bytes) => (bytes / requests / 1024).toFixed(2).padStart(16);
      console.log(`${name.padEnd(9)} ${kind.padEnd(14)} ${String(requests).padStart(8)}  ${per(r.allocated)}  ${per(r.promoted).slice(1)}  ${(r.scavenges / requests).toFixed(2).padStart(13)}  ${String(r.collections).padStart(11)}`);
      if (options.each) console.log(`    each collection [kind, KB allocated before it, KB promoted]: ${JSON.stringify(r.each)}`);
      for (const { site, bytes } of r.sites || []) console.log(`    ${Math.round(bytes / requests).toString().padStart(7)} B  ${site}`);
    }
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error.stack || error);
    process.exitCode = 1;
  });
}

module.exports = { measure, WORKLOADS };
