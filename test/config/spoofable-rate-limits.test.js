'use strict';
// With `enableIPSpoofing`, the client's address is the first X-Forwarded-For entry whoever sends
// it, so a rate limit by address limits nobody who changes that header. `svr check` (and the start)
// warns about each such rule; trustedProxies believes the header only from the proxies listed.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, getFreePort, runSvr, request, startServer } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

const LIMIT = { path: '/', rate: 0.01, burst: 1 }; // one request, then 429 for 100 s

test('svr --check warns about a rate limit by address with enableIPSpoofing, not about one by header', async () => {
  const dir = makeTempDir();
  fs.mkdirSync(path.join(dir, 'web'));
  const config = {
    port: await getFreePort(), wwwroot: 'web', enableIPSpoofing: true,
    rateLimits: [{ ...LIMIT, path: '/api/', key: 'header:X-Api-Key' }, LIMIT],
  };
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify(config));
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  assert.equal(result.code, 0, result.stderr);
  const warnings = result.stderr.split('\n').filter((line) => /rateLimits/.test(line));
  assert.equal(warnings.length, 1, result.stderr);
  assert.match(warnings[0], /svr-config\.json: rateLimits\[1\]: counts by the client's address, which enableIPSpoofing takes from X-Forwarded-For whoever sends it: .*list your proxies in trustedProxies instead/);
});

test('the start logs the same warning', async (t) => {
  const srv = await startServer({ config: { enableIPSpoofing: true, rateLimits: [LIMIT] } });
  t.after(() => srv.stop());
  // The primary logs the config's warnings before any worker forks, so before "listening on",
  // which startServer waited for: the line is there or was never logged.
  const line = srv.stderr().find((l) => /rateLimits\[0\]: counts by the client's address/.test(l));
  assert.ok(line, srv.stderr().join('\n'));
  assert.match(line, / warn primary: /);
  assert.match(line, /svr-config\.json: rateLimits\[0\]: counts by the client's address, which enableIPSpoofing takes from X-Forwarded-For whoever sends it: .*list your proxies in trustedProxies instead/);
});

// 20 requests, each claiming another address: how many pass.
async function rotating(site) {
  let passed = 0;
  for (let i = 1; i <= 20; i++) {
    const res = await request(`${site.url}/a.txt`, { headers: { 'x-forwarded-for': `203.0.113.${i}` } });
    if (res.status === 200) passed++;
  }
  return passed;
}

test('what the warning is about: with enableIPSpoofing every spoofed address passes; with trustedProxies only the first request', async (t) => {
  const spoofing = await startPipeline({ config: { enableIPSpoofing: true, rateLimits: [LIMIT] }, files: { 'a.txt': 'a' }, rateLimits: true });
  t.after(() => spoofing.stop());
  assert.equal(await rotating(spoofing), 20);
  const trusting = await startPipeline({ config: { trustedProxies: ['10.0.0.0/8'], rateLimits: [LIMIT] }, files: { 'a.txt': 'a' }, rateLimits: true });
  t.after(() => trusting.stop());
  assert.equal(await rotating(trusting), 1, 'the header is not believed from 127.0.0.1');
});
