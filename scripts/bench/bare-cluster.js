#!/usr/bin/env node
'use strict';
// A bare Node `cluster` server: the baseline svr's CPU-bound scenario is compared with.
// Every request runs the same code as svr's generated serverSideScript.js (work() as text/plain),
// nothing else: no logging, no routing.
// Usage: node scripts/bench/bare-cluster.js --port 8080 [--host 127.0.0.1] [--workers N]
const cluster = require('cluster');
const http = require('http');
const os = require('os');
const minimist = require('minimist');
const { compileHandler } = require('./cpu-work');

const args = minimist(process.argv.slice(2), { string: ['host'], default: { host: '127.0.0.1' } });
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
  const server = http.createServer(compileHandler());
  server.listen(Number(args.port), args.host);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

if (cluster.isPrimary === undefined ? cluster.isMaster : cluster.isPrimary) startPrimary();
else startWorker();
