'use strict';
// The pure helpers of server-side JavaScript, called directly: the url.parse-style object mods
// and scripts get, res.error's argument forms, SVR.JS's filterHeaders, and the Basic credentials
// parser. (Scripts' checkHostname is http/host.js hostMatches: test/unit/host.test.js.)

const test = require('node:test');
const assert = require('node:assert/strict');
const { urlObject, errorArguments, decorate, createForgiving } = require('../../lib/pipeline/scripting/svrjs-api');
const { filterHeaders } = require('../../lib/pipeline/scripting/legacy-script');
const { parseBasic } = require('../../lib/pipeline/credentials');

test('urlObject: a url.parse-style object; a repeated query key keeps its last value (SVR.JS 3.x)', () => {
  const parsed = urlObject({ headers: { host: 'Example.org:8080' }, socket: {} }, '/a/b.txt?x=1&x=2&y=#frag');
  assert.deepEqual({ ...parsed, query: { ...parsed.query } }, {
    protocol: 'http:', slashes: true, auth: null, host: 'example.org:8080', port: '8080', hostname: 'example.org',
    hash: null, search: '?x=1&x=2&y=', query: { x: '2', y: '' }, pathname: '/a/b.txt', path: '/a/b.txt?x=1&x=2&y=',
    href: 'http://example.org:8080/a/b.txt?x=1&x=2&y=',
  });
});

test('urlObject: https on an encrypted socket; IPv6 hosts; an absolute-form target; no Host header', () => {
  const secure = urlObject({ headers: { host: '[::1]' }, socket: { encrypted: true } }, '/');
  assert.equal(secure.protocol, 'https:');
  assert.equal(secure.hostname, '[::1]');
  assert.equal(secure.port, null);
  assert.equal(secure.href, 'https://[::1]/');
  const absolute = urlObject({ headers: { host: 'other.test' }, socket: {} }, 'HTTP://Abs.Example:81/q?a=1');
  assert.equal(absolute.host, 'abs.example:81', 'an absolute-form target names the host');
  assert.equal(absolute.pathname, '/q');
  const hostless = urlObject({ headers: {}, socket: {} }, '/p');
  assert.equal(hostless.host, null);
  assert.equal(hostless.protocol, null);
  assert.equal(hostless.search, null);
  assert.equal(hostless.href, '/p');
});

test('decorate: an unrewritten request shares one frozen URL object; a rewritten one keeps what was asked', () => {
  const s = { head: '', foot: '', forgiving: createForgiving({ warn() {} }, () => {}), log: { warn() {} } };
  const decorated = (url, svr) => {
    const req = { url, method: 'GET', headers: { host: 'example.org' }, socket: {}, svr };
    decorate({ s, req, res: {} });
    return req;
  };
  // Allocated once, not twice: the script runs while both are alive, and each is the GC's to copy.
  const plain = decorated('/a?x=1', { cleanHref: '/a', cleanSearch: '?x=1' });
  assert.equal(plain.originalParsedURL, plain.parsedURL);
  assert.equal(Object.isFrozen(plain.originalParsedURL), true);
  assert.equal(plain.originalParsedURL.query.x, '1');
  const rewritten = decorated('/inspect?from=old', { cleanHref: '/old/', cleanSearch: '' });
  assert.notEqual(rewritten.originalParsedURL, rewritten.parsedURL);
  assert.equal(rewritten.originalParsedURL.pathname, '/old/');
  assert.equal(rewritten.parsedURL.pathname, '/inspect');
});

test('urlObject: no query (or a bare "?") gives the one shared empty query, frozen and without a prototype, as querystring.parse("") would', () => {
  const req = { headers: { host: 'example.org' }, socket: {} };
  const plain = urlObject(req, '/a');
  const bare = urlObject(req, '/b?');
  assert.equal(plain.query, bare.query);
  assert.equal(Object.getPrototypeOf(plain.query), null);
  assert.equal(Object.isFrozen(plain.query), true);
  assert.deepEqual(Object.keys(plain.query), []);
  assert.equal(bare.search, '?');
  assert.notEqual(urlObject(req, '/c?x=1').query, plain.query);
});

test('decorate adds no listener to the response', () => {
  const { EventEmitter } = require('node:events');
  const s = { head: '', foot: '', forgiving: createForgiving({ warn() {} }, () => {}), log: { warn() {} } };
  const res = new EventEmitter();
  decorate({ s, req: { url: '/', method: 'GET', headers: {}, socket: {} }, res });
  assert.deepEqual(res.eventNames(), []);
  assert.equal(typeof res.redirect, 'function');
  assert.equal(typeof res.responseEnd, 'function');
});

test('errorArguments: (code[, extName][, error][, headers]) in any of SVR.JS\'s forms', () => {
  const error = new Error('x');
  assert.deepEqual(errorArguments(404), { status: 404, extName: undefined, error: undefined, headers: undefined });
  assert.deepEqual(errorArguments(500, 'Mod/1', error), { status: 500, extName: 'Mod/1', error, headers: undefined });
  assert.deepEqual(errorArguments(500, error), { status: 500, extName: undefined, error, headers: undefined });
  assert.deepEqual(errorArguments(429, { 'Retry-After': '7' }), { status: 429, extName: undefined, error: undefined, headers: { 'Retry-After': '7' } });
  assert.deepEqual(errorArguments(503, 'Mod/1', { 'Retry-After': '1' }), { status: 503, extName: 'Mod/1', error: undefined, headers: { 'Retry-After': '1' } });
  const fromStack = errorArguments(500, 'Mod/1', 'Error: first line\n    at somewhere');
  assert.equal(fromStack.error.message, 'Error: first line');
  assert.equal(fromStack.error.stack, 'Error: first line\n    at somewhere');
});

test('errorArguments: a code that is no error status becomes 501; a non-integer throws', () => {
  assert.equal(errorArguments(200).status, 501);
  assert.equal(errorArguments(599).status, 501, 'not a known status');
  assert.equal(errorArguments(600).status, 501);
  assert.throws(() => errorArguments('404'), TypeError);
  assert.throws(() => errorArguments(404.5), TypeError);
});

test('filterHeaders: drops null and undefined values, copies objects', () => {
  const cookies = ['a=1'];
  const filtered = filterHeaders({ a: 1, b: null, c: undefined, 'set-cookie': cookies });
  assert.deepEqual(filtered, { a: 1, 'set-cookie': ['a=1'] });
  assert.notEqual(filtered['set-cookie'], cookies);
  assert.deepEqual(filterHeaders(undefined), {});
});

test('parseBasic: name and password from a Basic header, null otherwise', () => {
  const basic = (text) => `Basic ${Buffer.from(text).toString('base64')}`;
  assert.deepEqual(parseBasic(basic('alice:se:cret')), { name: 'alice', password: 'se:cret' });
  assert.deepEqual(parseBasic(`  bAsIc ${Buffer.from('bob:').toString('base64')} `), { name: 'bob', password: '' });
  assert.equal(parseBasic(basic('no-colon')), null);
  assert.equal(parseBasic('Bearer abc'), null);
  assert.equal(parseBasic('Basic not base64!'), null);
  assert.equal(parseBasic(undefined), null);
});
