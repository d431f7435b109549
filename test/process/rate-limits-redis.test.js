'use strict';
// Rate limits shared by several hosts through a real Redis (Debian's redis-server) on loopback:
// two svr servers stand for two hosts. One client alternating between them gets the configured
// rate in all; with Redis stopped each host limits on its own ("whenDown": "local", the default),
// lets everything through ("open") or refuses with 503 ("closed"). Redis coming back is noticed.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { startServer, request, getFreePort, ensureDebianPackage, makeTempDir, LineWatcher } = require('../support/helpers');
const { hammer } = require('../support/rate-client');

const PID_SCRIPT = "if (href.startsWith('/api')) { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(String(process.pid)); return; }\nelseCallback();\n";
const LIMIT = { path: '/api/', rate: 20, burst: 5 };
const FRESH = { path: '/fresh/', rate: 20, burst: 5 }; // a bucket nobody used: its request must ask Redis
const SLOW = { path: '/slow/', rate: 0.01, burst: 1 }; // a bucket full again 100 s after one request: its key outlives the test's look
const redisServer = ensureDebianPackage('redis-server');

function assertRate(passed, { rate, burst, elapsedMs }, what) {
  const expected = burst + (rate * elapsedMs) / 1000;
  assert.ok(Math.abs(passed - expected) <= expected * 0.1, `${what}: ${passed} requests passed in ${elapsedMs} ms, expected ${expected.toFixed(1)} ± 10 %`);
}

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

async function startRedis(port) {
  const proc = spawn(redisServer.path, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', makeTempDir('svr-redis-')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = new LineWatcher(proc.stdout);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  await out.waitFor(/Ready to accept connections/);
  return { proc, stop: () => { proc.kill('SIGTERM'); return exited; } };
}

test('two hosts share one limit through Redis; each limits alone (or opens, or closes) while Redis is down', { skip: redisServer.skip }, async (t) => {
  const redisPort = await getFreePort();
  let redis = await startRedis(redisPort);
  t.after(() => redis.stop());
  const store = (whenDown) => ({ redis: `redis://127.0.0.1:${redisPort}`, whenDown, timeout: 200 });
  const host = (whenDown) => startServer({
    config: { workers: 2, metrics: { path: '/metrics', onSitePort: true }, rateLimits: [LIMIT, FRESH, SLOW], rateLimitStore: store(whenDown) },
    files: { 'serverSideScript.js': PID_SCRIPT },
  });
  const [a, b, open, closed] = await Promise.all([host('local'), host('local'), host('open'), host('closed')]);
  t.after(() => Promise.all([a, b, open, closed].map((server) => server.stop())));

  const shared = await hammer([`${a.url}/api/x`, `${b.url}/api/x`], { lanes: 4, ms: 3000 });
  assertRate(shared.statuses[200] || 0, { ...LIMIT, elapsedMs: shared.elapsedMs }, 'over both hosts, Redis up');
  const servedBy = [...shared.bodies.keys()];
  assert.ok(servedBy.length >= 2, `both hosts served (pids ${servedBy})`);
  assert.equal(metricValue((await request(`${a.url}/metrics`)).text, 'svr_rate_limit_redis_up'), 1);

  // The keys in Redis: `svr:rl:` + rule name + client, expiring when the bucket would be full again.
  assert.equal((await request(`${a.url}/slow/x`)).status, 404, 'let through to the static files');
  const Redis = require('ioredis');
  const look = new Redis(redisPort, '127.0.0.1', { lazyConnect: true });
  await look.connect();
  try {
    const keys = await look.keys('*');
    assert.ok(keys.length > 0 && keys.every((key) => key.startsWith('svr:rl:')), `every key starts with svr:rl: (${JSON.stringify(keys)})`);
    const slowKey = keys.find((key) => /^svr:rl:\/slow\/\n/.test(key));
    assert.ok(slowKey, `the /slow/ rule's key is there (${JSON.stringify(keys)})`);
    const ttl = await look.pttl(slowKey);
    assert.ok(ttl > 90000 && ttl <= 100000, `expires when the bucket is full again, 100 s after the request (PTTL ${ttl} ms)`);
  } finally {
    look.disconnect();
  }

  // A Redis that hangs (stopped with SIGSTOP): the request is answered while Redis stays stopped,
  // so it did not wait for Redis but for rateLimitStore.timeout, which the log names. How long it
  // took is printed, not asserted: a timing on a busy machine is no test.
  // (On /fresh/: a worker may still remember a refusal of /api/ and answer it without asking.)
  redis.proc.kill('SIGSTOP');
  const startedAt = Date.now();
  const hung = await request(`${b.url}/fresh/x`);
  const waited = Date.now() - startedAt;
  redis.proc.kill('SIGCONT');
  assert.equal(hung.status, 404, 'let through (whenDown "local", a full bucket) to the static files');
  await b.waitForLog(/rate limits: Redis at .* is unreachable \(Command timed out\)/);
  t.diagnostic(`answered after ${waited} ms with Redis stopped (timeout 200 ms)`);

  await redis.stop();
  await a.waitForLog(/rate limits: Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable .*whenDown applies/);
  const [aloneA, aloneB] = await Promise.all([hammer(`${a.url}/api/x`, { lanes: 2, ms: 2000 }), hammer(`${b.url}/api/x`, { lanes: 2, ms: 2000 })]);
  assertRate(aloneA.statuses[200] || 0, { ...LIMIT, elapsedMs: aloneA.elapsedMs }, 'host A alone, Redis down');
  assertRate(aloneB.statuses[200] || 0, { ...LIMIT, elapsedMs: aloneB.elapsedMs }, 'host B alone, Redis down');
  assert.ok(aloneA.statuses[429] > 0 && aloneB.statuses[429] > 0, 'both hosts still refuse');
  assert.equal(metricValue((await request(`${a.url}/metrics`)).text, 'svr_rate_limit_redis_up'), 0);

  const opened = await Promise.all(Array.from({ length: 20 }, () => request(`${open.url}/api/x`).then((res) => res.status)));
  assert.deepEqual(new Set(opened), new Set([200]), '"open": nothing is limited while Redis is down');
  const refused = await request(`${closed.url}/api/x`);
  assert.equal(refused.status, 503, '"closed": refused while Redis is down');
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(metricValue((await request(`${closed.url}/metrics`)).text, 'svr_rate_limited_requests_total{rule="/api/",outcome="unavailable"}'), 1);

  // Redis back on the same port: the hosts share their counts again (a fresh Redis: empty counts).
  // Both hosts must have noticed before the count starts: one still limiting alone would let more through.
  const sinceA = a.stderr().length;
  const sinceB = b.stderr().length;
  redis = await startRedis(redisPort);
  await a.waitForLog(/rate limits: Redis at .* is reachable; the hosts share their counters again/, 'stderr', sinceA, 10000);
  await b.waitForLog(/rate limits: Redis at .* is reachable; the hosts share their counters again/, 'stderr', sinceB, 10000);
  const again = await hammer([`${a.url}/api/x`, `${b.url}/api/x`], { lanes: 4, ms: 2000 });
  assertRate(again.statuses[200] || 0, { ...LIMIT, elapsedMs: again.elapsedMs }, 'over both hosts, Redis back');
});
