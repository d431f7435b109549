'use strict';
// lib/http/host.js: the one host parser and SVR.JS's host patterns, called directly.

const test = require('node:test');
const assert = require('node:assert/strict');
const { requestHost, compileHostPattern, hostMatches } = require('../../lib/http/host');

const req = (host) => ({ headers: host === undefined ? {} : { host } });

test('requestHost: lowercased, without port or trailing dot; :authority for HTTP/2; "" when absent', () => {
  assert.equal(requestHost(req('Example.COM:8080')), 'example.com');
  assert.equal(requestHost(req('example.com.')), 'example.com');
  assert.equal(requestHost(req('[::1]:8443')), '[::1]');
  assert.equal(requestHost(req('[::1]')), '[::1]');
  assert.equal(requestHost({ headers: { ':authority': 'h2.example:443' } }), 'h2.example');
  assert.equal(requestHost(req(undefined)), '');
  assert.equal(requestHost({}), '');
});

test('compileHostPattern: "*" and no pattern match every host (null)', () => {
  assert.equal(compileHostPattern('*'), null);
  assert.equal(compileHostPattern(undefined), null);
  assert.equal(compileHostPattern(null), null);
});

test('compileHostPattern: an exact name ignores case, port and a trailing dot', () => {
  const test = compileHostPattern('Example.com');
  assert.equal(test(req('example.com')), true);
  assert.equal(test(req('EXAMPLE.com:8080')), true);
  assert.equal(test(req('example.com.')), true);
  assert.equal(test(req('www.example.com')), false);
  assert.equal(test(req(undefined)), false);
});

test('compileHostPattern: "*.domain" matches the domain and every name below it, nothing else', () => {
  const test = compileHostPattern('*.example.org');
  assert.equal(test(req('example.org')), true);
  assert.equal(test(req('a.example.org')), true);
  assert.equal(test(req('a.b.example.org:81')), true);
  assert.equal(test(req('badexample.org')), false);
  assert.equal(test(req('example.org.evil')), false);
});

test('compileHostPattern: a pattern with a port compares the port too', () => {
  const test = compileHostPattern('example.com:8080');
  assert.equal(test(req('example.com:8080')), true);
  assert.equal(test(req('example.com:9090')), false);
  assert.equal(test(req('example.com')), false);
  // another spelling of the same name and port (a re-attack run evaded a host-scoped rate limit so)
  assert.equal(test(req('example.com.:8080')), true);
  assert.equal(test(req('EXAMPLE.com:08080')), true);
  assert.equal(compileHostPattern('example.com.:08080')(req('example.com:8080')), true);
});

test('hostMatches: the one-off form scripts use', () => {
  assert.equal(hostMatches(req('a.example.com'), '*.example.com'), true);
  assert.equal(hostMatches(req('a.example.com'), 'example.com'), false);
  assert.equal(hostMatches(req('anything'), '*'), true);
  assert.equal(hostMatches(req(undefined), undefined), true);
});
