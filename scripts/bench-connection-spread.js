#!/usr/bin/env node
'use strict';
// How keep-alive connections opened together spread over svr's workers, per scheduling policy.
//
//   node scripts/bench-connection-spread.js [--policy rr|none|reuseport] [--connections 5] [--trials 30] [--busy]
//                                           [--settle MS] [--svr PATH]
//
// Starts svr (2 workers) on a temp site whose serverSideScript.js answers /pid with the worker's
// process.pid, then per trial opens N connections at once, sends one request on each and counts
// how many landed on the busier worker. --busy keeps one core busy with a spinning child meanwhile.
// --policy reuseport (Node >= 22.12) measures what svr does not do: bench/reuse-port-cluster.js,
// 2 workers each listening on a socket of its own with SO_REUSEPORT.
// --settle MS: instead of one request, each connection sends CPU-bound requests (2 ms of busy
// work, about the blog's Fibonacci) back to back for MS milliseconds, reconnecting when a response
// says Connection: close, as wrk does; the trial records how long the split stayed uneven (more
// than half, rounded up, on one worker): the time svr's balancing took to even it out.
// --svr PATH: the svr.js to run (another checkout, to compare).
// Prints one JSON line: { policy, connections, busy, busierWorker: { count: trials }, load }, with
// --settle also unevenMs: { trials, median, max } over the trials that started uneven.
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
const settleMs = Number(args.settle || 0);
const EVEN = Math.ceil(connections / 2); // the most one worker holds in an even split
const svrScript = args.svr ? path.resolve(args.svr) : path.join(__dirname, '..', 'svr.js');
const SCRIPT = `if (req.url === '/pid' || req.url === '/work') {
  disableEndElseCallbackExecute = true;
  const until = req.url === '/work' ? process.hrtime.bigint() + 2000000n : 0n;
  while (process.hrtime.bigint() < until) { /* the request's CPU-bound work */ }
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end(String(process.pid));
}
`;

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

// One keep-alive connection sending /work back to back; reconnects when told Connection: close.
// onAnswer(pid) after each response.
function workLoop(port, onAnswer, until) {
  return new Promise((resolve, reject) => {
    const connect = () => {
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('utf8');
      socket.once('error', reject);
      const send = () => socket.write('GET /work HTTP/1.1\r\nHost: localhost\r\n\r\n');
      socket.on('data', (chunk) => {
        text += chunk;
        const match = /^HTTP[^]*?\r\n\r\n(?:[0-9a-f]+\r\n)?(\d+)(?:\r\n0\r\n\r\n)?/.exec(text);
        if (!match) return;
        text = text.slice(match[0].length);
        onAnswer(Number(match[1]));
        const closing = /\r\nconnection: *close/i.test(match[0]);
        if (Date.now() >= until) {
          socket.destroy();
          resolve();
        } else if (closing) {
          socket.destroy();
          connect();
        } else send();
      });
      socket.once('connect', send);
    };
    connect();
  });
}

// -> { busiest: connections on the busier worker at the first answers, unevenMs }
async function settleTrial(port) {
  const start = Date.now();
  const pidOfConnection = new Array(connections).fill(0);
  let firstBusiest = 0;
  let unevenMs = null;
  const busiestNow = () => {
    const counts = {};
    for (const pid of pidOfConnection) if (pid) counts[pid] = (counts[pid] || 0) + 1;
    return Math.max(...Object.values(counts));
  };
  await Promise.all(pidOfConnection.map((_, i) => workLoop(port, (pid) => {
    pidOfConnection[i] = pid;
    if (pidOfConnection.includes(0)) return;
    const busiest = busiestNow();
    if (firstBusiest === 0) firstBusiest = busiest;
    if (unevenMs === null && busiest <= EVEN) unevenMs = Date.now() - start;
  }, start + settleMs)));
  return { busiest: firstBusiest, unevenMs: unevenMs === null ? settleMs : unevenMs };
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
  const command = args.policy === 'reuseport' ? [path.join(__dirname, 'bench', 'reuse-port-cluster.js'), String(port), '2'] : [svrScript, '--config', configFile];
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
  const unevenMs = [];
  try {
    for (let i = 0; i < trials; i++) {
      const outcome = settleMs > 0 ? await settleTrial(port) : { busiest: await trial(port) };
      busierWorker[outcome.busiest] = (busierWorker[outcome.busiest] || 0) + 1;
      if (outcome.busiest > EVEN) unevenMs.push(outcome.unevenMs);
    }
  } finally {
    if (spinner) spinner.kill('SIGKILL');
    svr.kill('SIGTERM');
  }
  await new Promise((resolve) => svr.once('exit', resolve));
  fs.rmSync(dir, { recursive: true, force: true });
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const result = { policy: args.policy, connections, busy: args.busy, busierWorker, load };
  if (settleMs > 0) {
    unevenMs.sort((a, b) => a - b);
    result.unevenMs = { trials: unevenMs.length, median: unevenMs[Math.floor(unevenMs.length / 2)] ?? null, max: unevenMs[unevenMs.length - 1] ?? null, settleMs };
  }
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
