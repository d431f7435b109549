'use strict';
// The client in the load-balancer test, run in its own network namespace.
//   node client.js basic URL REQUESTS WS_SESSIONS
//     REQUESTS GETs of URL/app/whoami (4 at a time) and WS_SESSIONS WebSocket echo sessions on
//     URL/app/ws; prints one JSON line: { ok, failed, xff: [distinct X-Forwarded-For], ws }
//   node client.js load URL CONCURRENCY MAX_REQUESTS MAX_MS [PAUSE_MS]
//     keeps CONCURRENCY GETs in flight until "stop" arrives on stdin, MAX_REQUESTS were sent or
//     MAX_MS passed, each lane waiting PAUSE_MS (default 0) after each answer; prints "started",
//     then one JSON line:
//     { sent, ok, failed, failures: [{ atMs, error }] }
// Every request has a 10 s timeout; every loop is bounded.

const http = require('node:http');
const { echoSession } = require('./websocket');

const [mode, base, ...rest] = process.argv.slice(2);
// `node --test test/` runs every file under test/: without arguments this file does nothing.
if (process.argv.length < 4) return;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function get(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 10000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`HTTP ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function basic(requests, sessions) {
  const xff = new Set();
  let ok = 0;
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      next++;
      try {
        xff.add(JSON.parse(await get(`${base}/app/whoami`)).xff);
        ok++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all([1, 2, 3, 4].map(worker));
  let ws = 0;
  for (let i = 0; i < sessions; i++) {
    const echoes = await echoSession(`${base}/app/ws`, [`hello ${i}`, `bye ${i}`]).catch(() => []);
    if (echoes.join('|') === `echo:hello ${i}|echo:bye ${i}`) ws++;
  }
  console.log(JSON.stringify({ ok, failed, xff: [...xff], ws }));
}

async function load(concurrency, maxRequests, maxMs, pauseMs) {
  const startedAt = Date.now();
  let stop = false;
  process.stdin.on('data', (data) => { if (String(data).includes('stop')) stop = true; });
  const deadline = setTimeout(() => { stop = true; }, maxMs);
  const result = { sent: 0, ok: 0, failed: 0, failures: [] };
  const worker = async () => {
    while (!stop && result.sent < maxRequests) {
      result.sent++;
      try {
        await get(`${base}/app/whoami`);
        result.ok++;
      } catch (error) {
        result.failed++;
        result.failures.push({ atMs: Date.now() - startedAt, error: error.message });
      }
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  };
  console.log('started');
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearTimeout(deadline);
  console.log(JSON.stringify(result));
  process.exit(0);
}

if (mode === 'basic') basic(Number(rest[0]), Number(rest[1]));
else load(Number(rest[0]), Number(rest[1]), Number(rest[2]), Number(rest[3] || 0));
