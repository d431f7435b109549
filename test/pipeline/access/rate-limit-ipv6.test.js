'use strict';
// An IPv6 client is given a whole /64: counted by address, it could rotate through 2^64 of them and
// never meet its limit. Rate limits count an IPv6 client by its network (`ipv6Prefix`, 64 by
// default); 128 counts each address, as nginx's $binary_remote_addr does.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startPipeline } = require('../../support/pipeline');
const { request } = require('../../support/helpers');

const SLOW = 0.01; // one request every 100 s: after the burst, every request of the test is over the limit

async function statusesFrom(site, addresses) {
  const statuses = [];
  for (const address of addresses) statuses.push((await request(`${site.url}/api/x.txt`, { headers: { 'x-forwarded-for': address } })).status);
  return statuses;
}

const ROTATING = Array.from({ length: 20 }, (_, i) => `2001:db8::${(i + 1).toString(16)}`);

test('addresses rotated within one /64 share one bucket; another /64 and an IPv4 client have their own', async (t) => {
  const site = await startPipeline({
    config: { trustedProxies: ['127.0.0.1', '::1'], rateLimits: [{ path: '/api/', rate: SLOW, burst: 1 }] },
    files: { 'api/x.txt': 'limited\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.deepEqual(await statusesFrom(site, ROTATING), [200, ...new Array(19).fill(429)]);
  assert.deepEqual(await statusesFrom(site, ['2001:db8:0:1::1', '2001:db8:0:1::2']), [200, 429], 'the next /64');
  assert.deepEqual(await statusesFrom(site, ['203.0.113.7', '::ffff:203.0.113.7', '203.0.113.8']), [200, 429, 200], 'IPv4: by address, mapped or not');
});

test('"ipv6Prefix": 128 counts each IPv6 address on its own', async (t) => {
  const site = await startPipeline({
    config: { trustedProxies: ['127.0.0.1', '::1'], rateLimits: [{ path: '/api/', rate: SLOW, burst: 1, ipv6Prefix: 128 }] },
    files: { 'api/x.txt': 'limited\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.deepEqual(await statusesFrom(site, ROTATING.slice(0, 5)), [200, 200, 200, 200, 200]);
  assert.deepEqual(await statusesFrom(site, [ROTATING[0]]), [429]);
});
