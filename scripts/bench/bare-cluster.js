#!/usr/bin/env node
'use strict';
// A bare Node `cluster` server: the baseline svr's script scenarios are compared with.
// Every request runs the same code as svr's generated serverSideScript.js, nothing else: no
// logging, no routing. --workload cpu (default): fib(25) for every URL (cpu-work.js);
// --workload fib: the blog's /fibonacci?n=N (fib-work.js); --workload hello: "Hello World!"
// (hello-work.js). Node's scheduling policy applies
// (round-robin on Linux) unless NODE_CLUSTER_SCHED_POLICY says otherwise.
// Usage: node scripts/bench/bare-cluster.js --port 8080 [--host 127.0.0.1] [--workers N] [--workload cpu|fib|hello]
const cluster = require('cluster');
const http = require('http');
const os = require('os');
const minimist = require('minimist');
const { compileHandler } = require('./cpu-work');
const { compileFibHandler } = require('./fib-work');
const { compileHelloHandler } = require('./hello-work');

const HANDLERS = { cpu: compileHandler, fib: compileFibHandler, hello: compileHelloHandler };

const args = minimist(process.argv.slice(2), { string: ['host', 'workload'], default: { host: '127.0.0.1', workload: 'cpu' } });
const workerCount = Number(args.workers) || availableCores();
let shuttingDown = false;

function availableCores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

function startPrimary() {
  for (let i = 0; i < workerCount; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (!shuttingDown) console.error(`bare-cluster: worker ${worker.process.pid} died (${signal || code})`);
  });
  process.on('SIGTERM', stopPrimary);
  process.on('SIGINT', stopPrimary);
}

function stopPrimary() {
  shuttingDown = true;
  for (const worker of Object.values(cluster.workers)) worker.kill('SIGTERM');
  cluster.on('exit', () => {
    if (Object.keys(cluster.workers).length === 0) process.exit(0);
  });
}

function startWorker() {
  if (!HANDLERS[args.workload]) throw new Error(`--workload: one of ${Object.keys(HANDLERS).join(', ')}`);
  const handler = HANDLERS[args.workload]();
  const server = http.createServer(handler);
  server.listen(Number(args.port), args.host);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

if (cluster.isPrimary === undefined ? cluster.isMaster : cluster.isPrimary) startPrimary();
else startWorker();
