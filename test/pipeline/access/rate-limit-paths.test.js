'use strict';
// A rate limit counts a path however the client spells it: percent-encoded letters and dots
// (`/%61pi/`, `/wp-login%2ephp`) name the same file or script once decoded, so they must take from
// the same bucket, or a limit on a login form is bypassed by encoding one character. Letter case
// is not looked at either: an application behind a proxy rule (Express, ASP.NET) often routes
// `/LOGIN` as `/login`.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { startPipeline } = require('../../support/pipeline');
const { startFakeFastcgi } = require('../../support/fake-fastcgi');
const { makeTempDir, request } = require('../../support/helpers');

const SLOW = 0.01; // one request every 100 s: after the burst, every request of the test is over the limit

test('a percent-encoded spelling of a limited path is counted by the same rule', async (t) => {
  const site = await startPipeline({
    config: { rateLimits: [{ path: '/api/', rate: SLOW, burst: 1 }] },
    files: { 'api/x.txt': 'limited\n' },
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.equal((await request(`${site.url}/api/x.txt`)).status, 200, 'the burst');
  assert.equal((await request(`${site.url}/api/x.txt`)).status, 429);
  for (const url of ['/%61pi/x.txt', '/%61%70%69/x.txt', '/api/%78.txt', '/%61pi']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 429, `${url} is the same path: ${res.status} ${res.text.trim()}`);
    assert.ok(!res.text.includes('limited'), url);
  }
});

test('a limited script cannot be reached by encoding a character of its name', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write(`Content-Type: text/plain\r\n\r\nran ${r.params.SCRIPT_FILENAME}`);
    r.end();
  });
  const site = await startPipeline({
    config: {
      fastcgi: [{ upstream: fcgi.upstream }],
      rateLimits: [{ path: '/wp-login.php', rate: SLOW, burst: 1, methods: ['POST'] }],
    },
    files: { 'wp-login.php': '<?php ?>' },
    rateLimits: true,
  });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const post = (url) => request(site.url + url, { method: 'POST', headers: { 'content-length': '0' } });
  assert.equal((await post('/wp-login.php')).status, 200, 'the burst');
  assert.equal((await post('/wp-login.php')).status, 429);
  for (const url of ['/wp-login%2ephp', '/wp-login%2Ephp', '/%77p-login.php', '/wp-login.ph%70']) {
    assert.equal((await post(url)).status, 429, url);
  }
  assert.deepEqual(fcgi.requests.map((p) => p.SCRIPT_FILENAME), [path.join(site.root, 'wp-login.php')], 'the script ran once');
});

test('another letter case of a limited path is counted by the same rule, before the proxy forwards it', async (t) => {
  const http = require('node:http');
  const seen = [];
  const up = http.createServer((req, res) => { seen.push(req.url); res.end('app\n'); });
  await new Promise((resolve) => up.listen(0, '127.0.0.1', resolve));
  t.after(() => up.close());
  const site = await startPipeline({
    config: { proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${up.address().port}`] }], rateLimits: [{ path: '/Login', rate: SLOW, burst: 1 }] },
    rateLimits: true,
  });
  t.after(() => site.stop());
  assert.equal((await request(`${site.url}/login`)).status, 200, 'the burst');
  // letters whose upper case is ASCII: 'ı' (dotless i, %C4%B1) upper-cases to 'I'
  for (const url of ['/login', '/LOGIN', '/Login', '/lOgIn?x=1', '/loG%C4%B1n', '/LOG%C4%B1N']) assert.equal((await request(site.url + url)).status, 429, url);
  assert.equal((await request(`${site.url}/other`)).status, 200, 'other paths are not counted');
  assert.deepEqual(seen, ['/login', '/other']);
});
