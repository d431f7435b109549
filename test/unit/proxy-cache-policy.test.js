'use strict';
// What the proxy cache may store and serve (lib/pipeline/cache/policy.js), header by header.

const test = require('node:test');
const assert = require('node:assert/strict');
const { bypassReason, storable, parseCacheControl, ageOf, UNKEYED_OVERRIDES } = require('../../lib/pipeline/cache/policy');

const request = (method, headers = {}) => ({ method, headers });

test('requests the cache never sees: methods, Authorization, Cookie, URL/host/method override headers', () => {
  assert.equal(bypassReason(request('GET')), null);
  assert.equal(bypassReason(request('HEAD')), null);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) assert.equal(bypassReason(request(method)), 'method');
  assert.equal(bypassReason(request('GET', { authorization: 'Basic eA==' })), 'authorization');
  assert.equal(bypassReason(request('GET', { cookie: 'a=b' })), 'cookie');
  for (const name of UNKEYED_OVERRIDES) assert.equal(bypassReason(request('GET', { [name]: '/admin' })), name);
  assert.deepEqual([...UNKEYED_OVERRIDES].sort(), ['front-end-https', 'x-forwarded-path', 'x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-protocol', 'x-forwarded-scheme', 'x-forwarded-server', 'x-forwarded-ssl', 'x-forwarded-uri', 'x-host', 'x-http-host-override', 'x-http-method', 'x-http-method-override', 'x-method-override', 'x-original-host', 'x-original-method', 'x-original-uri', 'x-original-url', 'x-rewrite-path', 'x-rewrite-url', 'x-scheme', 'x-url-scheme']);
});

test('a header name with anything but letters, digits and "-" (CGI, WSGI, Rack and PHP read "_" and "." as "-") or a body: never cached', () => {
  for (const name of ['x_original_url', 'x_forwarded_port', 'anything_else', 'x.original.url', 'x~y']) assert.equal(bypassReason(request('GET', { [name]: '1' })), 'header name', name);
  assert.equal(bypassReason(request('GET', { 'content-length': '5' })), 'body');
  assert.equal(bypassReason(request('GET', { 'transfer-encoding': 'chunked' })), 'body');
  assert.equal(bypassReason(request('GET', { 'content-length': '0', 'x-normal-name': '1' })), null);
  assert.equal(bypassReason(request('GET', { ':method': 'GET', ':path': '/', ':authority': 'x', ':scheme': 'https' })), null, 'HTTP/2 pseudo-headers');
});

test('a lifetime from s-maxage first, then max-age, then Expires - Date', () => {
  assert.equal(storable(200, { 'cache-control': 'max-age=60, s-maxage=5' }).lifetimeMs, 5000);
  assert.equal(storable(200, { 'cache-control': 'public, max-age=60' }).lifetimeMs, 60000);
  const date = 'Thu, 26 Nov 2026 10:00:00 GMT';
  assert.equal(storable(200, { expires: 'Thu, 26 Nov 2026 10:01:30 GMT', date }).lifetimeMs, 90000);
  assert.deepEqual(storable(200, {}), { reason: 'no explicit lifetime' });
  assert.deepEqual(storable(200, { expires: 'yesterday', date }), { reason: 'expired' });
  assert.deepEqual(storable(200, { 'cache-control': 'max-age=0' }), { reason: 'expired' });
  assert.equal(storable(200, { 'cache-control': 'max-age=0', etag: '"a"' }).lifetimeMs, 0, 'stored to be revalidated');
});

test('never stored: Set-Cookie, private, no-store, Vary: *, no-cache without a validator, other statuses', () => {
  const fresh = { 'cache-control': 'max-age=60' };
  assert.deepEqual(storable(200, { ...fresh, 'set-cookie': ['a=b'] }), { reason: 'set-cookie' });
  assert.equal(storable(200, { ...fresh, 'set-cookie': ['a=b'] }, { setCookie: 'strip' }).lifetimeMs, 60000, 'unless configured');
  assert.deepEqual(storable(200, { 'cache-control': 'private, max-age=60' }), { reason: 'private' });
  assert.deepEqual(storable(200, { 'cache-control': 'no-store, max-age=60' }), { reason: 'no-store' });
  assert.deepEqual(storable(200, { ...fresh, vary: 'Accept-Encoding, *' }), { reason: 'vary *' });
  assert.deepEqual(storable(200, { 'cache-control': 'no-cache' }), { reason: 'no-cache without a validator' });
  assert.deepEqual(storable(200, { 'cache-control': 'no-cache', 'last-modified': 'Thu, 26 Nov 2026 10:00:00 GMT' }), { lifetimeMs: 0, revalidateAlways: true });
  for (const status of [206, 302, 304, 500, 502, 503]) assert.deepEqual(storable(status, fresh), { reason: `status ${status}` });
  for (const status of [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]) assert.equal(storable(status, fresh).lifetimeMs, 60000);
});

test('stale-while-revalidate and stale-if-error, unless must-revalidate', () => {
  const policy = storable(200, { 'cache-control': 'max-age=1, stale-while-revalidate=30, stale-if-error=60' });
  assert.deepEqual([policy.staleWhileRevalidateMs, policy.staleIfErrorMs], [30000, 60000]);
  const strict = storable(200, { 'cache-control': 'max-age=1, stale-while-revalidate=30, must-revalidate' });
  assert.deepEqual([strict.staleWhileRevalidateMs, strict.staleIfErrorMs], [0, 0]);
});

test('Cache-Control parsing and Age', () => {
  assert.deepEqual([...parseCacheControl('Public, MAX-AGE="60", no-cache')], [['public', true], ['max-age', '60'], ['no-cache', true]]);
  assert.equal(ageOf({ storedAt: 10000, upstreamAge: '5' }, 17500), 12);
  assert.equal(ageOf({ storedAt: 10000, upstreamAge: 'soon' }, 10000), 0);
});
