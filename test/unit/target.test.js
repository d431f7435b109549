'use strict';
// lib/http/target.js: the request-target sanitizer and its splitters, called directly.

const test = require('node:test');
const assert = require('node:assert/strict');
const { sanitizeTarget, walkTarget, originForm, absoluteAuthority, splitTarget, encodePath, encodeSegment } = require('../../lib/http/target');

test('sanitizeTarget keeps a clean target as it was sent', () => {
  assert.deepEqual(sanitizeTarget('/sub/%61.txt?x=1'), { ok: true, pathname: '/sub/a.txt', href: '/sub/%61.txt', search: '?x=1', changed: false });
  assert.deepEqual(sanitizeTarget('/'), { ok: true, pathname: '/', href: '/', search: '', changed: false });
  assert.deepEqual(sanitizeTarget('/dir/'), { ok: true, pathname: '/dir/', href: '/dir/', search: '', changed: false });
});

// The clean-path shortcut must answer exactly as the full walk does, for every target.
test('sanitizeTarget answers as the full walk for any target, clean or not', () => {
  const alphabet = ['/', 'a', 'Z', '0', '.', '..', '-', '_', '~', '%2e', '%2F', '%00', '%', '%zz', '\\', '?', '#', ' ', '\x7f', 'é', "'", '(', '*', ':', '@', ';', '=', '&', '//'];
  let seed = 29;
  const random = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (let i = 0; i < 20000; i++) {
    let target = random(5) === 0 ? '' : '/';
    for (let j = random(10); j > 0; j--) target += alphabet[random(alphabet.length)];
    if (target === '') continue;
    assert.deepEqual(sanitizeTarget(target), walkTarget(target), JSON.stringify(target));
  }
  for (const target of ['/', '/a', '/a/', '/a.b/c-d_e~f', "/x/!$&'()*+,;=:@", '/a?b=c&d', '/a?', '/.well-known/x', '/a/.b', '/a/b.']) {
    assert.deepEqual(sanitizeTarget(target), walkTarget(target), target);
  }
});

test('sanitizeTarget normalises //, ., .., %2f and backslashes, and says it changed', () => {
  for (const [target, pathname] of [
    ['//sub//a.txt', '/sub/a.txt'], ['/./sub/./a.txt', '/sub/a.txt'], ['/sub/../sub/a.txt', '/sub/a.txt'],
    ['/sub%2fa.txt', '/sub/a.txt'], ['/sub%5Ca.txt', '/sub/a.txt'], ['/sub\\a.txt', '/sub/a.txt'],
    ['/sub/.', '/sub/'], ['/sub/..', '/'],
  ]) {
    const result = sanitizeTarget(target);
    assert.equal(result.ok, true, target);
    assert.equal(result.pathname, pathname, target);
    assert.equal(result.changed, true, target);
  }
});

test('sanitizeTarget re-encodes a changed path, keeping what a segment may hold unencoded', () => {
  const result = sanitizeTarget('//a%20b/c$d&e+f,g;h=i:j@k');
  assert.equal(result.pathname, '/a b/c$d&e+f,g;h=i:j@k');
  assert.equal(result.href, '/a%20b/c$d&e+f,g;h=i:j@k');
});

test('sanitizeTarget refuses climbing above the root with 403', () => {
  for (const target of ['/..', '/../x', '/%2e%2e/x', '/.%2e/x', '/a/../../x', '/..%2fx', '/..\\x', '/..%5cx']) {
    assert.deepEqual(sanitizeTarget(target), { ok: false, status: 403, reason: 'the path climbs above the web root' }, target);
  }
});

test('sanitizeTarget decodes once: %252e%252e is a name, not ..', () => {
  const result = sanitizeTarget('/%252e%252e/x');
  assert.equal(result.ok, true);
  assert.equal(result.pathname, '/%2e%2e/x');
});

test('sanitizeTarget answers malformed targets with 400 and a reason', () => {
  const reasons = {
    '': 'empty request target',
    '/a b': 'invalid character in the request target',
    '/é': 'invalid character in the request target',
    '/a\x7f': 'invalid character in the request target',
    '*': 'the path does not start with /',
    'a/b': 'the path does not start with /',
    '/%zz': 'invalid percent-encoding',
    '/a%2': 'invalid percent-encoding',
    '/%': 'invalid percent-encoding',
    '/%c0%af': 'invalid percent-encoding',
    '/%e0%80%af': 'invalid percent-encoding',
    '/%ff': 'invalid percent-encoding',
    '/a%00.html': 'NUL byte in the path',
  };
  for (const [target, reason] of Object.entries(reasons)) {
    assert.deepEqual(sanitizeTarget(target), { ok: false, status: 400, reason }, JSON.stringify(target));
  }
  assert.equal(sanitizeTarget(undefined).status, 400);
});

test('sanitizeTarget leaves the query alone and drops a fragment', () => {
  const result = sanitizeTarget('//a?x=1//2&y=%zz#frag');
  assert.equal(result.pathname, '/a');
  assert.equal(result.search, '?x=1//2&y=%zz');
});

test('absoluteAuthority gives an absolute-form target\'s authority as sent, null for any other target', () => {
  assert.equal(absoluteAuthority('http://A.example:8080/sub?q'), 'A.example:8080');
  assert.equal(absoluteAuthority('https://example.com'), 'example.com');
  assert.equal(absoluteAuthority('http://[::1]?q=1'), '[::1]');
  assert.equal(absoluteAuthority('http:///x'), '');
  for (const target of ['/plain?x', '*', 'example.com:443', '//example.com/x']) assert.equal(absoluteAuthority(target), null, target);
});

test('originForm strips scheme and authority from an absolute-form target only', () => {
  assert.equal(originForm('http://127.0.0.1:8080/sub/a.txt?q'), '/sub/a.txt?q');
  assert.equal(originForm('https://example.com'), '/');
  assert.equal(originForm('http://example.com?q=1'), '/?q=1');
  assert.equal(originForm('/plain?x'), '/plain?x');
  assert.equal(originForm('*'), '*');
});

test('splitTarget separates path and query and drops the fragment', () => {
  assert.deepEqual(splitTarget('/a/b?x=1#f'), { path: '/a/b', search: '?x=1' });
  assert.deepEqual(splitTarget('/a/b'), { path: '/a/b', search: '' });
  assert.deepEqual(splitTarget('/a#f?not-a-query'), { path: '/a', search: '' });
  assert.deepEqual(splitTarget('/a?'), { path: '/a', search: '?' });
});

test('encodePath and encodeSegment percent-encode all but the sub-delimiters a segment allows', () => {
  assert.equal(encodePath('/a b/é/#?%'), '/a%20b/%C3%A9/%23%3F%25');
  assert.equal(encodeSegment('$&+,;=:@'), '$&+,;=:@');
  assert.equal(encodeSegment('a/b'), 'a%2Fb');
});
