#!/usr/bin/env node
'use strict';
// How keep-alive connections opened together spread over svr's workers, per scheduling policy.
//
//   node scripts/bench-connection-spread.js [--policy rr|none|reuseport] [--connections 5] [--trials 30] [--busy]
//
// Starts svr (2 workers) on a temp site whose serverSideScript.js answers /pid with the worker's
// process.pid, then per trial opens N connections at once, sends one request on each and counts
// how many landed on the busier worker. --busy keeps one core busy with a spinning child meanwhile.
// --policy reuseport (Node >= 22.12) measures what svr does not do: bench/reuse-port-cluster.js,
// 2 workers each listening on a socket of its own with SO_REUSEPORT.
// Prints one JSON line: { policy, connections, busy, busierWorker: { count: trials }, load }.
// Bounded: at most 1000 trials, the spinning child stops by itself after 120 s.
const { spawn } = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const minimist = require('minimist');

const args = minimist(process.argv.slice(2), { string: ['policy'], boolean: ['busy'], default: { policy: 'rr', connections: 5, trials: 30 } });
const connections = Number(args.connections);
const trials = Math.min(Number(args.trials), 1000);
const SCRIPT = "if (req.url === '/pid') { disableEndElseCallbackExecute = true; res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end(String(process.pid)); }\n";

function pidOf(socket) {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      text += chunk;
      const match = /\r\n\r\n(?:[0-9a-f]+\r\n)?(\d+)/.exec(text);
      if (match) resolve(Number(match[1]));
    });
    socket.write('GET /pid HTTP/1.1\r\nHost: localhost\r\n\r\n');
  });
}

async function trial(port) {
  const sockets = await Promise.all(Array.from({ length: connections }, () => new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  })));
  const pids = await Promise.all(sockets.map(pidOf));
  for (const socket of sockets) socket.destroy();
  const counts = {};
  for (const pid of pids) counts[pid] = (counts[pid] || 0) + 1;
  return Math.max(...Object.values(counts));
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-spread-'));
  const site = path.join(dir, 'web'); // a web root of its own: svr refuses one holding its config
  fs.mkdirSync(site);
  fs.writeFileSync(path.join(site, 'serverSideScript.js'), SCRIPT);
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = server.address().port;
  server.close();
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: site, workers: 2, enableLogging: false, schedulingPolicy: args.policy }));
  const command = args.policy === 'reuseport' ? [path.join(__dirname, 'bench', 'reuse-port-cluster.js'), String(port), '2'] : [path.join(__dirname, '..', 'svr.js'), '--config', configFile];
  const svr = spawn(process.execPath, command, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  await new Promise((resolve, reject) => {
    svr.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (/listening on/.test(stderr)) resolve();
    });
    svr.once('exit', (code) => reject(new Error(`svr exited (${code}): ${stderr}`)));
  });
  const spinner = args.busy ? spawn(process.execPath, ['-e', 'const end = Date.now() + 120000; while (Date.now() < end) {}'], { stdio: 'ignore' }) : null;
  const busierWorker = {};
  try {
    for (let i = 0; i < trials; i++) {
      const most = await trial(port);
      busierWorker[most] = (busierWorker[most] || 0) + 1;
    }
  } finally {
    if (spinner) spinner.kill('SIGKILL');
    svr.kill('SIGTERM');
  }
  await new Promise((resolve) => svr.once('exit', resolve));
  fs.rmSync(dir, { recursive: true, force: true });
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(JSON.stringify({ policy: args.policy, connections, busy: args.busy, busierWorker, load }));
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
