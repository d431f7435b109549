'use strict';
// Rate limits on one host, with real sockets and a real cluster: the configured rate whatever
// worker a connection lands on (the primary counts), 429 with Retry-After, exemptions, keys by
// header, delay instead of refusal, the log line and the metrics, a bound on the counters under a
// flood of spoofed addresses, and config errors named by key.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { startServer, request, runSvr, makeTempDir, writeFiles } = require('../support/helpers');
const { hammer } = require('../support/rate-client');

// Answers its worker's pid under /api/ (so a test sees which worker served), else static files.
const PID_SCRIPT = "if (href.startsWith('/api')) { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(String(process.pid)); return; }\nelseCallback();\n";

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

// Within ±10 % of what a bucket of `burst` refilled at `rate` lets through in elapsedMs.
function assertRate(passed, { rate, burst, elapsedMs }, what) {
  const expected = burst + (rate * elapsedMs) / 1000;
  assert.ok(Math.abs(passed - expected) <= expected * 0.1, `${what}: ${passed} requests passed in ${elapsedMs} ms, expected ${expected.toFixed(1)} ± 10 %`);
}

test('two workers, one limit: the configured rate whatever worker serves, 429 + Retry-After, log and metrics', async (t) => {
  const limit = { path: '/api/', rate: 20, burst: 5 };
  const server = await startServer({
    config: { workers: 2, schedulingPolicy: 'rr', metrics: { path: '/metrics', onSitePort: true }, rateLimits: [limit] },
    files: { 'serverSideScript.js': PID_SCRIPT, 'index.html': 'home\n' },
  });
  t.after(() => server.stop());
  const result = await hammer(`${server.url}/api/x`, { lanes: 4, ms: 3000 });
  const passed = result.statuses[200] || 0;
  assertRate(passed, { ...limit, elapsedMs: result.elapsedMs }, 'over both workers');
  assert.equal(result.bodies.size, 2, `both workers served some of the ${passed} (pids ${[...result.bodies.keys()]})`);
  assert.ok(result.statuses[429] > passed, 'the rest were refused');
  assert.equal(result.errors, 0);
  assert.deepEqual([...result.retryAfter], ['1'], 'Retry-After: whole seconds, at least 1');
  // Outside the rule's prefix nothing is limited.
  for (let i = 0; i < 10; i++) assert.equal((await request(`${server.url}/`)).status, 200);
  await server.waitForLog(/rate limits: \/api\/: refusing (::ffff:)?127\.0\.0\.1 \(over 20\/s, burst 5\)/);
  const metrics = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(metrics, 'svr_rate_limited_requests_total{rule="/api/",outcome="refused"}'), result.statuses[429]);
  assert.equal(metricValue(metrics, 'svr_rate_limit_keys'), 1);
  assert.ok(server.stdout().some((line) => / "GET \/api\/x HTTP\/1\.1" 429 /.test(line)), 'the access log shows the 429');
  // The rest of a flood: one summing line every 10 s, not a line a refusal.
  await server.waitForLog(/rate limits: refused in the last 10 s: \/api\/: \d+ from 1 client\(s\)/, 'stderr', 0, 15000);
  assert.ok(server.stderr().filter((line) => /rate limits:/.test(line)).length <= 4, 'at most two lines per worker');
});

test('exempt addresses, one bucket per header value, methods, and a refusal that lasts until its Retry-After', async (t) => {
  const server = await startServer({
    config: {
      workers: 2,
      metrics: { path: '/metrics', onSitePort: true },
      rateLimits: [
        { path: '/api/free/', rate: 1, burst: 1, exempt: ['127.0.0.0/8', '::1'] },
        { path: '/api/post/', rate: 1, burst: 1, methods: ['POST'] },
        { name: 'api-by-key', path: '/api/', rate: 1, burst: 2, key: 'header:X-Api-Key' },
      ],
    },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  t.after(() => server.stop());
  for (let i = 0; i < 5; i++) assert.equal((await request(`${server.url}/api/free/x`)).status, 200, 'an exempt client is never limited');
  assert.equal((await request(`${server.url}/api/post/x`, { method: 'POST' })).status, 200);
  assert.equal((await request(`${server.url}/api/post/x`, { method: 'POST' })).status, 429);
  // A GET is not the POST rule's: the next rule (/api/, burst 2, keyed by address without the header) counts it.
  assert.equal((await request(`${server.url}/api/post/x`)).status, 200);
  assert.equal((await request(`${server.url}/api/post/x`)).status, 200);
  assert.equal((await request(`${server.url}/api/post/x`)).status, 429);
  const as = (key) => request(`${server.url}/api/x`, { headers: { 'x-api-key': key } });
  assert.deepEqual([(await as('alice')).status, (await as('alice')).status, (await as('alice')).status], [200, 200, 429]);
  assert.deepEqual([(await as('bob')).status, (await as('bob')).status], [200, 200], 'another key has its own bucket');
  const refused = await as('alice');
  assert.equal(refused.status, 429);
  assert.equal(refused.headers['retry-after'], '1');
  assert.match(refused.text, /Too many requests/);
  // A rule's name labels its metrics: the /api/ rule refused the third GET and Alice twice.
  const metrics = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(metrics, 'svr_rate_limited_requests_total{rule="api-by-key",outcome="refused"}'), 3, metrics);
  assert.equal(metricValue(metrics, 'svr_rate_limited_requests_total{rule="/api/post/",outcome="refused"}'), 1, 'without a name: the path');
});

test('"key": "user": each user logged in by a 401 rule has a bucket of their own', async (t) => {
  const account = (name) => ({ name, salt: 's', pass: crypto.createHash('sha256').update(`pw-${name}s`).digest('hex') });
  const server = await startServer({
    config: {
      workers: 2,
      users: [account('alice'), account('bob')],
      nonStandardCodes: [{ regex: '/^\\/api\\/user\\//', scode: 401, disableBruteProtection: true }],
      rateLimits: [{ path: '/api/user/', rate: 1, burst: 1, key: 'user' }],
    },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  t.after(() => server.stop());
  const as = (name) => request(`${server.url}/api/user/x`, { headers: { authorization: `Basic ${Buffer.from(`${name}:pw-${name}`).toString('base64')}` } }).then((res) => res.status);
  assert.deepEqual([await as('alice'), await as('alice')], [200, 429]);
  assert.equal(await as('bob'), 200, 'from the same address, another user has a bucket of their own');
  assert.equal((await request(`${server.url}/api/user/x`)).status, 401, 'no login: the 401 rule answers first');
});

test('"over": "delay" holds requests until their turn (nginx limit_req without nodelay), refuses past the burst', async (t) => {
  const server = await startServer({
    config: { workers: 2, metrics: { path: '/metrics', onSitePort: true }, rateLimits: [{ path: '/api/', rate: 5, burst: 3, over: 'delay' }] },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: false });
  const startedAt = Date.now();
  const timed = () => request(`${server.url}/api/x`, { agent }).then((res) => ({ status: res.status, ms: Date.now() - startedAt }));
  const answers = await Promise.all([timed(), timed(), timed(), timed()]);
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(statuses, [200, 200, 200, 429], 'three fit the burst, the fourth is refused');
  const last = Math.max(...answers.filter((a) => a.status === 200).map((a) => a.ms));
  assert.ok(last >= 390, `the third waited two intervals of 200 ms (answered after ${last} ms)`);
  const metrics = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(metrics, 'svr_rate_limited_requests_total{rule="/api/",outcome="delayed"}'), 2);
  assert.equal(metricValue(metrics, 'svr_rate_limited_requests_total{rule="/api/",outcome="refused"}'), 1);
});

test('a flood of spoofed addresses behind a trusted proxy keeps at most rateLimitStore.maxKeys counters', async (t) => {
  const server = await startServer({
    config: {
      workers: 2, trustedProxies: ['127.0.0.1', '::1'], metrics: { path: '/metrics', onSitePort: true },
      rateLimits: [{ path: '/api/', rate: 1, burst: 1 }], rateLimitStore: { maxKeys: 100 },
    },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const statuses = await Promise.all(Array.from({ length: 400 }, (_, i) => request(`${server.url}/api/x`, {
    agent, headers: { 'x-forwarded-for': `198.51.${i >> 8}.${i & 255}` },
  }).then((res) => res.status)));
  agent.destroy();
  assert.ok(statuses.every((status) => status === 200), 'each spoofed address is a new client with a full bucket');
  const metrics = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(metrics, 'svr_rate_limit_keys'), 100);
  // The real client behind the proxy is still limited.
  const repeat = () => request(`${server.url}/api/x`, { headers: { 'x-forwarded-for': '203.0.113.9' } }).then((res) => res.status);
  assert.deepEqual([await repeat(), await repeat()], [200, 429]);
});

test('a bad rate limit is named by its key', async () => {
  const dir = makeTempDir();
  writeFiles(dir, {
    'web/index.html': 'x',
    'svr-config.json': JSON.stringify({
      wwwroot: 'web',
      rateLimits: [{ path: 'api', rate: 0, burst: 0, key: 'cookie' }],
      rateLimitStore: { redis: 'http://x', whenDown: 'sometimes' },
    }),
  });
  const { code, stderr } = await runSvr(['--check', '--config', `${dir}/svr-config.json`]);
  assert.notEqual(code, 0);
  for (const key of ['rateLimits[0].path', 'rateLimits[0].rate', 'rateLimits[0].burst', 'rateLimits[0].key', 'rateLimitStore.redis', 'rateLimitStore.whenDown']) {
    assert.ok(stderr.includes(`${key}:`), `${key} is named:\n${stderr}`);
  }
});

test('a reload keeps the counts: a client over its limit stays refused', async (t) => {
  const server = await startServer({
    config: { workers: 2, rateLimits: [{ path: '/api/', rate: 0.1, burst: 2 }] },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  t.after(() => server.stop());
  const status = () => request(`${server.url}/api/x`).then((res) => res.status);
  assert.deepEqual([await status(), await status(), await status()], [200, 200, 429]);
  const since = server.stderr().length;
  server.signal('SIGHUP');
  await server.waitForLog(/reload complete/, 'stderr', since);
  // On a new connection, which only the new workers accept (a kept-alive one would still reach the
  // old worker draining it).
  const after = await request(`${server.url}/api/x`, { agent: false });
  assert.equal(after.status, 429, 'new workers, the same counter in the primary');
});

test('--single-threaded: the process counts its own limits', async (t) => {
  const server = await startServer({
    config: { rateLimits: [{ path: '/api/', rate: 1, burst: 2 }] },
    files: { 'serverSideScript.js': PID_SCRIPT },
    args: ['--single-threaded'],
  });
  t.after(() => server.stop());
  const status = () => request(`${server.url}/api/x`).then((res) => res.status);
  assert.deepEqual([await status(), await status(), await status()], [200, 200, 429]);
});
