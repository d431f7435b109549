'use strict';
// The RFC 3875 environment a script gets, for requests a plain HTTP test cannot make (TLS,
// HTTP/2, a client behind a proxy, a logged-in user).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { buildEnvironment } = require('../../lib/pipeline/gateway/environment');

const site = { serverName: 'svr', root: '/srv/www' };
const script = { filename: '/srv/www/index.php', scriptName: '/index.php', pathInfo: '/a' };

function env(req, fromTrustedProxy = false) {
  return Object.fromEntries(buildEnvironment({
    method: 'GET', httpVersion: '1.1', httpVersionMajor: 1, url: '/index.php/a?q=1', headers: {},
    socket: { remoteAddress: '::ffff:192.0.2.1', remotePort: 5555, localAddress: '::ffff:192.0.2.2', localPort: 443 },
    ...req,
    svr: { originalUrl: '/index.php/a?q=1', clientAddress: undefined, user: null, ...req.svr },
  }, site, script, req.extra, fromTrustedProxy));
}

test('over TLS: HTTPS=on and REQUEST_SCHEME=https; addresses without the IPv4-mapped prefix', () => {
  const e = env({ socket: { encrypted: true, remoteAddress: '::ffff:192.0.2.1', remotePort: 5555, localAddress: '::ffff:192.0.2.2', localPort: 443 }, headers: { host: 'Example.COM:443' } });
  assert.equal(e.HTTPS, 'on');
  assert.equal(e.REQUEST_SCHEME, 'https');
  assert.equal(e.SERVER_NAME, 'example.com');
  assert.equal(e.SERVER_PORT, '443');
  assert.equal(e.REMOTE_ADDR, '192.0.2.1');
  assert.equal(e.REMOTE_PORT, '5555');
  assert.equal(e.SERVER_ADDR, '192.0.2.2');
  assert.equal(e.PATH_TRANSLATED, '/srv/www/a');
});

test('HTTP/2: :authority is HTTP_HOST and SERVER_NAME, pseudo-headers are left out', () => {
  const e = env({ httpVersion: '2.0', httpVersionMajor: 2, headers: { ':authority': 'h2.example', ':path': '/x', ':method': 'GET' } });
  assert.equal(e.HTTP_HOST, 'h2.example');
  assert.equal(e.SERVER_NAME, 'h2.example');
  assert.equal(e.SERVER_PROTOCOL, 'HTTP/2.0');
  assert.equal(e.HTTPS, 'on');
  assert.ok(!Object.keys(e).some((name) => name.includes(':')));
});

test('a client behind a trusted proxy, a logged-in user, extra variables that replace others', () => {
  const e = env({ svr: { clientAddress: '203.0.113.7', user: 'alice' }, extra: { SERVER_NAME: 'fixed.example', APP: '1' } });
  assert.equal(e.REMOTE_ADDR, '203.0.113.7');
  assert.equal(e.REMOTE_PORT, '', 'the forwarded client\'s port is unknown');
  assert.equal(e.REMOTE_USER, 'alice');
  assert.equal(e.AUTH_TYPE, 'Basic');
  assert.equal(e.SERVER_NAME, 'fixed.example');
  assert.equal(e.APP, '1');
});

test('no HTTP_PROXY, no header with "_" in its name, Content-Type/-Length as CONTENT_*', () => {
  const e = env({ method: 'POST', headers: { proxy: 'http://evil', 'x_forwarded_for': '1.2.3.4', 'content-type': 'text/plain', 'content-length': '3', 'x-ok': 'a' } });
  assert.equal(e.HTTP_PROXY, undefined);
  assert.equal(e.HTTP_X_FORWARDED_FOR, undefined);
  assert.equal(e.CONTENT_TYPE, 'text/plain');
  assert.equal(e.CONTENT_LENGTH, '3');
  assert.equal(e.HTTP_CONTENT_TYPE, undefined);
  assert.equal(e.HTTP_X_OK, 'a');
  assert.equal(e.QUERY_STRING, 'q=1');
  assert.equal(e.REDIRECT_STATUS, '200');
});

test('X-Forwarded-*, Forwarded and X-Real-IP reach the script only from a trusted proxy', () => {
  const headers = { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'h', forwarded: 'for=1.2.3.4', 'x-real-ip': '198.51.100.2' };
  const names = ['HTTP_X_FORWARDED_FOR', 'HTTP_X_FORWARDED_PROTO', 'HTTP_X_FORWARDED_HOST', 'HTTP_FORWARDED', 'HTTP_X_REAL_IP'];
  const untrusted = env({ headers });
  for (const name of names) assert.equal(untrusted[name], undefined, name);
  const trusted = env({ headers }, true);
  assert.deepEqual(names.map((name) => trusted[name]), Object.values(headers));
});
