#!/usr/bin/env node
'use strict';
// A bare `cluster` whose workers each listen on a socket of their own with SO_REUSEPORT (listen's
// reusePort, Node >= 22.12), so the kernel spreads new connections over them by a hash of the
// addresses; every request is answered with the worker's pid. Prints "listening on PORT" on
// stderr once every worker listens (an exclusive listen sends the primary no 'listening').
// For scripts/bench-connection-spread.js --policy reuseport.
//   node scripts/bench/reuse-port-cluster.js PORT [WORKERS]
const cluster = require('node:cluster');
const http = require('node:http');

const port = Number(process.argv[2]);
const workers = Number(process.argv[3]) || 2;

if (cluster.isPrimary) {
  let up = 0;
  for (let i = 0; i < workers; i++) {
    cluster.fork().on('message', (message) => {
      if (message === 'listening' && ++up === workers) console.error(`listening on ${port}`);
    });
  }
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers)) worker.kill();
    process.exit(0);
  });
} else {
  http.createServer((req, res) => res.end(String(process.pid)))
    .listen({ port, host: '127.0.0.1', reusePort: true, exclusive: true }, () => process.send('listening'));
}
