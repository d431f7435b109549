#!/usr/bin/env node
'use strict';
// The blog workload as a plain Node app for PM2 (`pm2-runtime start fib-app.js -i N`), which does
// the clustering itself: the same handler as bare-cluster.js --workload fib, on BENCH_PORT.
const http = require('http');
const { compileFibHandler } = require('./fib-work');

http.createServer(compileFibHandler()).listen(Number(process.env.BENCH_PORT), process.env.BENCH_HOST || '127.0.0.1');
