'use strict';
// A `nonStandardCodes` rule with `url` protects exactly one path, while the application behind a
// proxy rule may read "/api/admin/", "/api/ADMIN" or "/api/admin;x" as "/api/admin". `svr check`
// (and the start) warns about such a rule and names the prefix rule to use; that rule is shown to
// hold in front of the proxy.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { once } = require('node:events');
const { makeTempDir, getFreePort, runSvr, startServer } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

test('svr --check warns about a url rule in front of a proxy rule, with the regex to use', async () => {
  const dir = makeTempDir();
  fs.mkdirSync(path.join(dir, 'web'));
  const config = {
    port: await getFreePort(), wwwroot: 'web',
    nonStandardCodes: [{ url: '/api/admin', scode: 403 }, { url: '/old', scode: 301, location: '/new' }],
    proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }],
  };
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify(config));
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  assert.equal(result.code, 0, result.stderr);
  const warnings = result.stderr.split('\n').filter((line) => line.startsWith('warning: '));
  assert.equal(warnings.length, 1, result.stderr);
  assert.match(warnings[0], /svr-config\.json: nonStandardCodes\[0\]\.url: protects exactly "\/api\/admin", but proxy\[0\] \("\/api\/"\) forwards the paths around it/);
  assert.match(warnings[0], /"regex": "\/\^\\\\\/api\\\\\/admin\(\?:\[\\\\\/;\.\]\|\$\)\/i"/);
});

test('the start logs the same warning', async (t) => {
  const srv = await startServer({
    config: {
      nonStandardCodes: [{ url: '/api/admin', scode: 403 }],
      proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }],
    },
  });
  t.after(() => srv.stop());
  // The primary logs the config's warnings before any worker forks, so before "listening on",
  // which startServer waited for: the line is there or was never logged.
  const line = srv.stderr().find((l) => /nonStandardCodes\[0\]\.url: protects exactly/.test(l));
  assert.ok(line, srv.stderr().join('\n'));
  assert.match(line, / warn primary: /);
  assert.match(line, /svr-config\.json: nonStandardCodes\[0\]\.url: protects exactly "\/api\/admin", but proxy\[0\] \("\/api\/"\) forwards the paths around it/);
  assert.match(line, /"regex": "\/\^\\\\\/api\\\\\/admin\(\?:\[\\\\\/;\.\]\|\$\)\/i"/);
});

function rawGet(port, target) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => { received += chunk; });
    socket.on('end', () => resolve(Number(received.split(' ')[1])));
    socket.on('error', reject);
    socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

test('the suggested prefix rule refuses the variants an upstream may normalise; the url rule does not', async (t) => {
  const up = http.createServer((req, res) => res.end('upstream'));
  up.listen(0, '127.0.0.1');
  await once(up, 'listening');
  t.after(() => up.close());
  const proxy = [{ path: '/api/', upstreams: [`http://127.0.0.1:${up.address().port}`] }];
  const exact = await startPipeline({ config: { nonStandardCodes: [{ url: '/api/admin', scode: 403 }], proxy } });
  t.after(() => exact.stop());
  const prefix = await startPipeline({ config: { nonStandardCodes: [{ regex: '/^\\/api\\/admin(?:[\\/;.]|$)/i', scode: 403 }], proxy } });
  t.after(() => prefix.stop());
  const variants = ['/api/admin', '/api/%61dmin', '/api/admin/', '/api/admin;x', '/api/ADMIN', '/api/admin.', '/api/admin/users', '/api/admin?x=1'];
  for (const target of variants) assert.equal(await rawGet(prefix.port, target), 403, `prefix rule: ${target}`);
  assert.equal(await rawGet(prefix.port, '/api/administrators'), 200, 'another path is not caught');
  for (const target of ['/api/admin', '/api/%61dmin', '/api/admin?x=1']) assert.equal(await rawGet(exact.port, target), 403, `url rule: ${target}`);
  assert.equal(await rawGet(exact.port, '/api/admin/'), 200, 'the url rule protects one exact path');
});
