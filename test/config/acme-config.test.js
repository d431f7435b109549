'use strict';
// The `acme` key in `svr check`: what it refuses and what it warns about.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, runSvr } = require('../support/helpers');

async function check(config) {
  const dir = makeTempDir();
  fs.mkdirSync(path.join(dir, 'web'));
  const file = path.join(dir, 'svr-config.json');
  fs.writeFileSync(file, JSON.stringify({ wwwroot: 'web', stateDirectory: 'state', ...config }));
  return { file, ...(await runSvr(['check', '--config', file])) };
}

test('svr check names an ACME site that is not served on port 80 or 443', async () => {
  const result = await check({ port: 8080, sport: 8443, domain: 'example.com', acme: { email: 'ops@example.com' } });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stderr, /warning: .*svr-config\.json: acme: example\.com is not served on port 80 \(port: 8080\) nor 443 \(sport: 8443\), where a CA validates http-01 and tls-alpn-01/);
  const served = await check({ port: 80, sport: 443, domain: 'example.com', acme: {} });
  assert.equal(served.code, 0);
  assert.doesNotMatch(served.stderr, /acme:/);
  // Only TLS-ALPN-01, and sport is not 443: named.
  const alpnOnly = await check({ port: 80, sport: 8443, domain: 'example.com', acme: { challenges: ['tls-alpn-01'] } });
  assert.match(alpnOnly.stderr, /acme: example\.com is not served/);
});

test('svr check refuses ACME without a name, with cert/key, or with a malformed key', async () => {
  const noName = await check({ acme: {} });
  assert.equal(noName.code, 1);
  assert.match(noName.stderr, /acme: ACME needs a DNS name to ask a certificate for: set "domain" \(or "acme.domains"\)/);
  const both = await check({ domain: 'example.com', cert: 'x.pem', key: 'x.key', acme: {} });
  assert.match(both.stderr, /acme: svr serves "cert" and "key" when they are set/);
  const bad = await check({ domain: 'example.com', acme: { directory: 'ftp://x', email: 'nobody', challenges: ['dns-01'], keyType: 'dsa', domains: ['*.example.com'], colour: 1 } });
  assert.equal(bad.code, 1);
  for (const key of ['acme.directory', 'acme.email', 'acme.challenges\\[0\\]', 'acme.keyType', 'acme.domains\\[0\\]', 'acme.colour']) {
    assert.match(bad.stderr, new RegExp(`: ${key}: `), key);
  }
  assert.match(bad.stderr, /no wildcards: they need DNS-01/);
});
