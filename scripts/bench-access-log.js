#!/usr/bin/env node
'use strict';
// Micro-benchmark (not a test): what the access log costs per request, in CPU time, for each
// logFormat. Each "request" is the work the log does for one: createAccessLog's function at the
// start, then the response's 'close' (the line formatted and put into the batch), with the batch
// written to /dev/null once every --batch requests (as once per event-loop turn under load). The
// same loop without the access log is measured too and taken off, so the figure is the log's own.
//
//   node scripts/bench-access-log.js [--requests 300000] [--rounds 5] [--batch 16] [--json]
//
// Prints, per format, the median over the rounds of CPU ns per request (process.cpuUsage), and the
// rounds' range. --json prints the same as one JSON object (what `npm run bench` reads through
// bench/access-log-cost.js).

const { EventEmitter } = require('node:events');
const minimist = require('minimist');
const accessLog = require('../lib/access-log');

const args = minimist(process.argv.slice(2), { boolean: ['json'], default: { requests: 300000, rounds: 5, batch: 16 } });
const FORMATS = ['combined', 'json'];

// The html-1k request of the bench (wrk's headers), as the pipeline leaves it.
const HEADERS = { host: '127.0.0.1:8080', 'user-agent': 'wrk/4.1.0', referer: 'http://127.0.0.1:8080/' };
const SOCKET = { remoteAddress: '::ffff:127.0.0.1' };
const RESPONSE_HEADERS = { 'content-length': 1024 };

class FakeResponse extends EventEmitter {
  constructor() {
    super();
    this.statusCode = 200;
  }

  getHeader(name) {
    return RESPONSE_HEADERS[name];
  }
}

function requestPair() {
  const req = { method: 'GET', url: '/bench-1k.html', httpVersion: '1.1', headers: HEADERS, socket: SOCKET, svr: { originalUrl: '/bench-1k.html', clientAddress: '::ffff:127.0.0.1', user: null } };
  return [req, new FakeResponse()];
}

// CPU µs for `requests` requests through logRequest (null: the loop alone).
function cpuMicroseconds(logRequest, requests, batch) {
  const start = process.cpuUsage();
  for (let i = 0; i < requests; i++) {
    const [req, res] = requestPair();
    if (logRequest) logRequest(req, res);
    res.emit('close');
    if (logRequest && i % batch === batch - 1) accessLog.flush();
  }
  if (logRequest) accessLog.flush();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

function measure(format) {
  const logRequest = accessLog.createAccessLog({ enableLogging: true, logFormat: format });
  const perRequest = [];
  cpuMicroseconds(logRequest, args.requests / 2, args.batch); // warm-up: optimised code, a settled heap
  cpuMicroseconds(null, args.requests / 2, args.batch);
  for (let round = 0; round < args.rounds; round++) {
    const base = cpuMicroseconds(null, args.requests, args.batch);
    const logged = cpuMicroseconds(logRequest, args.requests, args.batch);
    perRequest.push(((logged - base) * 1000) / args.requests);
  }
  perRequest.sort((a, b) => a - b);
  return { nsPerRequest: Math.round(perRequest[Math.floor(perRequest.length / 2)]), range: [Math.round(perRequest[0]), Math.round(perRequest[perRequest.length - 1])] };
}

function main() {
  accessLog.useFile('/dev/null');
  const results = { node: process.versions.node, requests: args.requests, rounds: args.rounds, batch: args.batch, formats: {} };
  for (const format of FORMATS) results.formats[format] = measure(format);
  if (args.json) return void console.log(JSON.stringify(results));
  console.log(`access log, CPU per request (node ${results.node}, ${args.rounds} rounds of ${args.requests} requests, a write every ${args.batch}):`);
  for (const format of FORMATS) {
    const { nsPerRequest, range } = results.formats[format];
    console.log(`  ${format.padEnd(8)} ${(nsPerRequest / 1000).toFixed(2)} µs (rounds ${(range[0] / 1000).toFixed(2)}-${(range[1] / 1000).toFixed(2)})`);
  }
}

main();
