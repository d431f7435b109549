'use strict';
// The health path (200, 503 once draining, never logged) and the Prometheus metrics (counted in
// the workers, summed in the primary, surviving a worker's death; on the site's port or its own).

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { startServer, request, getFreePort, readyWorkerPids } = require('../support/helpers');

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

test('metrics on the site port (onSitePort): counts by method and status, bytes, histogram, survive a killed worker', async (t) => {
  const server = await startServer({
    config: { workers: 2, health: { path: '/healthz' }, metrics: { path: '/metrics', onSitePort: true } },
    files: { 'index.html': 'x'.repeat(100) },
  });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: false });
  for (let i = 0; i < 7; i++) assert.equal((await request(`${server.url}/`, { agent })).status, 200);
  for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/missing`, { agent })).status, 404);
  assert.equal((await request(`${server.url}/`, { method: 'HEAD', agent })).status, 200);
  assert.equal((await request(`${server.url}/healthz`)).text, 'ok\n');
  let text = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(text, 'svr_http_requests_total{method="GET",status="2xx"}'), 7);
  assert.equal(metricValue(text, 'svr_http_requests_total{method="GET",status="4xx"}'), 3);
  assert.equal(metricValue(text, 'svr_http_requests_total{method="HEAD",status="2xx"}'), 1);
  assert.ok(metricValue(text, 'svr_http_response_bytes_total') >= 700);
  assert.equal(metricValue(text, 'svr_http_request_duration_seconds_count'), 11);
  assert.equal(metricValue(text, 'svr_http_request_duration_seconds_bucket{le="+Inf"}'), 11);
  assert.equal(metricValue(text, 'svr_workers'), 2);
  assert.equal(metricValue(text, 'svr_worker_restarts_total'), 0);
  assert.ok(metricValue(text, 'svr_open_connections') >= 1, 'the scrape\'s own connection is open');
  assert.ok(Math.abs(metricValue(text, 'svr_start_time_seconds') - Date.now() / 1000) < 120);
  // Health and metrics requests are neither counted nor logged.
  assert.ok(!server.stdout().some((line) => /healthz|metrics/.test(line)));

  // A worker killed outright: its counts so far were reported (once a second, and before every
  // scrape), the replacement starts, restarts counts it.
  const since = server.stderr().length;
  process.kill(readyWorkerPids(server)[0], 'SIGKILL');
  await server.waitForLog(/worker \d+ ready/, 'stderr', since);
  text = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(text, 'svr_worker_restarts_total'), 1);
  assert.equal(metricValue(text, 'svr_http_requests_total{method="GET",status="2xx"}'), 7);
  assert.equal(metricValue(text, 'svr_workers'), 2);
  const reloadSince = server.stderr().length;
  server.signal('SIGHUP');
  await server.waitForLog(/reload complete/, 'stderr', reloadSince);
  text = (await request(`${server.url}/metrics`)).text;
  assert.equal(metricValue(text, 'svr_reloads_total'), 1);
  assert.equal(metricValue(text, 'svr_http_requests_total{method="GET",status="2xx"}'), 7);
});

test('metrics on their own port (in the primary), not on the site port; proxy upstream health', async (t) => {
  const metricsPort = await getFreePort();
  const up = http.createServer((req, res) => res.end('up'));
  await new Promise((resolve) => up.listen(0, '127.0.0.1', resolve));
  t.after(() => up.close());
  const server = await startServer({
    config: { metrics: { port: metricsPort }, proxy: [{ path: '/app/', upstreams: [`http://127.0.0.1:${up.address().port}`, 'http://127.0.0.1:1'] }] },
    files: { 'index.html': 'home' },
  });
  t.after(() => server.stop());
  await server.waitForLog(/metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/);
  assert.equal((await request(`${server.url}/app/`)).text, 'up');
  assert.equal((await request(`${server.url}/app/`)).text, 'up'); // the dead one is tried, taken out, retried
  assert.equal((await request(`${server.url}/metrics`)).status, 404);
  const text = (await request(`http://127.0.0.1:${metricsPort}/metrics`)).text;
  assert.equal(metricValue(text, 'svr_http_requests_total{method="GET",status="2xx"}'), 2);
  assert.equal(metricValue(text, `svr_proxy_upstream_up{upstream="http://127.0.0.1:${up.address().port}"}`), 1);
  assert.equal(metricValue(text, 'svr_proxy_upstream_up{upstream="http://127.0.0.1:1"}'), 0);
});

test('health turns 503 as soon as the server drains; health.drainDelay keeps serving meanwhile', async (t) => {
  const server = await startServer({
    config: { health: { path: '/healthz', drainDelay: 60000 } },
    files: { 'index.html': 'home' },
    args: ['--single-threaded'],
  });
  t.after(async () => { server.signal('SIGKILL'); await server.stop(); });
  const agent = new http.Agent({ keepAlive: true });
  assert.equal((await request(`${server.url}/healthz`, { agent })).status, 200);
  const since = server.stderr().length;
  server.signal('SIGTERM');
  await server.waitForLog(/SIGTERM: stopping gracefully/, 'stderr', since);
  // The kept-alive connection and new ones: health 503, the site still served, Connection: close.
  const health = await request(`${server.url}/healthz`, { agent });
  assert.equal(health.status, 503);
  assert.equal(health.text, 'draining\n');
  const page = await request(`${server.url}/`);
  assert.equal(page.text, 'home');
  assert.equal(page.headers.connection, 'close');
  assert.equal((await request(`${server.url}/healthz?probe=1`)).status, 503);
  agent.destroy();
});
