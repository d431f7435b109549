'use strict';
// What a rate-limit rule means, as docs/limits-and-caching.md "What a rule means" states it:
// Retry-After in whole seconds rounded up, a rule's `host`, its `name` (and the default one) in
// the log line, an exemption whatever the key, and the health and metrics paths never limited.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startPipeline } = require('../../support/pipeline');
const { request } = require('../../support/helpers');

const SLOW = 0.01; // one request every 100 s: after the burst, every request of the test is over the limit

test('Retry-After is the whole seconds until the request would pass, rounded up', async (t) => {
  const site = await startPipeline({
    // 0.4/s: a token every 2.5 s, so the wait after the burst is between 2 and 2.5 s, written 3
    config: { rateLimits: [{ path: '/slow/', rate: SLOW, burst: 1 }, { path: '/half/', rate: 0.4, burst: 1 }] },
    files: { 'slow/x.txt': 'x\n', 'half/x.txt': 'x\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.equal((await request(`${site.url}/slow/x.txt`)).status, 200, 'the burst');
  const slow = await request(`${site.url}/slow/x.txt`);
  assert.equal(slow.status, 429);
  assert.equal(slow.headers['retry-after'], '100', 'a token every 100 s: the next one is 100 s away');
  assert.equal((await request(`${site.url}/half/x.txt`)).status, 200, 'the burst');
  const half = await request(`${site.url}/half/x.txt`);
  assert.equal(half.status, 429);
  assert.equal(half.headers['retry-after'], '3', 'a wait of 2.x s is rounded up, not down or to the nearest');
});

test("a rule's host: only requests for that host are counted; its default name is host and path", async (t) => {
  const site = await startPipeline({
    config: { rateLimits: [{ host: 'limited.example', path: '/', rate: SLOW, burst: 1 }] },
    files: { 'index.html': 'home\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  const as = (host) => request(`${site.url}/`, { headers: { host } });
  assert.equal((await as('limited.example')).status, 200, 'the burst');
  assert.equal((await as('limited.example')).status, 429);
  for (let i = 0; i < 3; i++) assert.equal((await as('other.example')).status, 200, 'another host is not counted');
  assert.equal((await as('limited.example')).status, 429, 'still refused: the other host took nothing from it either');
  await site.waitForLog(/^warn rate limits: limited\.example\/: refusing (::ffff:)?127\.0\.0\.1 \(over 0\.01\/s, burst 1\)/);
});

test("a rule's name is the one in the log line; the health and metrics paths are never limited", async (t) => {
  const site = await startPipeline({
    config: {
      health: { path: '/healthz' },
      metrics: { path: '/metrics', onSitePort: true },
      rateLimits: [{ name: 'everything', path: '/', rate: SLOW, burst: 1 }],
    },
    files: { 'index.html': 'home\n' },
    scrapeMetrics: async () => 'svr_up 1\n',
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.equal((await request(`${site.url}/`)).status, 200, 'the burst');
  assert.equal((await request(`${site.url}/`)).status, 429);
  for (let i = 0; i < 3; i++) {
    assert.equal((await request(`${site.url}/healthz`)).status, 200, 'the health path, under a rule on "/"');
    assert.equal((await request(`${site.url}/metrics`)).status, 200, 'the metrics path, under a rule on "/"');
  }
  await site.waitForLog(/^warn rate limits: everything: refusing /);
  assert.ok(!site.stderr().some((line) => /rate limits: \/: /.test(line)), 'the name replaces the path in the log');
});

test('an exemption holds whatever the key: a rule keyed by a header never limits an exempt address', async (t) => {
  const site = await startPipeline({
    config: {
      rateLimits: [
        { path: '/free/', rate: SLOW, burst: 1, key: 'header:X-Api-Key', exempt: ['127.0.0.0/8', '::1'] },
        { path: '/api/', rate: SLOW, burst: 1, key: 'header:X-Api-Key' },
      ],
    },
    files: { 'free/x.txt': 'x\n', 'api/x.txt': 'x\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  const as = (path, key) => request(site.url + path, { headers: { 'x-api-key': key } });
  for (let i = 0; i < 4; i++) assert.equal((await as('/free/x.txt', 'alice')).status, 200, 'exempt, whatever key it sends');
  // The same key on a rule without the exemption is limited: the header was read as the key.
  assert.deepEqual([(await as('/api/x.txt', 'alice')).status, (await as('/api/x.txt', 'alice')).status], [200, 429]);
});
