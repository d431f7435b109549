'use strict';
// Runs inside the guest (Node 20): keeps CONCURRENCY clients sending GET requests to URL, each on a
// new connection, until its stdin closes (or a hard cap of requests/time is reached). Prints
// "started" after the first successful response, then at the end one JSON line:
// {"ok": N, "failed": N, "errors": ["..."], "codes": {"ECONNRESET": N, ...}} (codes: every failure by
// error code, or "status N").
const http = require('node:http');

const url = process.argv[2] || 'http://127.0.0.1/';
const concurrency = Number(process.argv[3] || 4);
const MAX_REQUESTS = 200000;
const MAX_MS = 120000;

let ok = 0;
let failed = 0;
const errors = [];
const codes = {}; // failures by error code
let stopping = false;
let started = false;
const t0 = Date.now();

function once() {
  const sent = Date.now();
  const note = (what, code) => {
    failed++;
    codes[code] = (codes[code] || 0) + 1;
    if (errors.length < 10) errors.push(`${what} (sent ${new Date(sent).toISOString()}, failed after ${Date.now() - sent} ms)`);
  };
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 10000 }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 200) ok++;
        else note(`status ${res.statusCode}`, `status ${res.statusCode}`);
        resolve();
      });
      res.on('error', (err) => { note(`response: ${err.message}`, err.code || 'error'); resolve(); });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (err) => { note(`${err.code || 'error'}: ${err.message}`, err.code || 'error'); resolve(); });
  });
}

async function client() {
  while (!stopping && ok + failed < MAX_REQUESTS && Date.now() - t0 < MAX_MS) {
    await once();
    if (!started && ok > 0) { started = true; process.stdout.write('started\n'); }
  }
}

process.stdin.on('end', () => { stopping = true; });
process.stdin.on('error', () => { stopping = true; });
process.stdin.resume();

Promise.all(Array.from({ length: concurrency }, client)).then(() => {
  process.stdout.write(JSON.stringify({ ok, failed, errors, codes }) + '\n');
  process.exit(0);
});
