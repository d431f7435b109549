'use strict';
// Small pure helpers, called directly: the product name, the listing's sizes, media types, client
// addresses, and the certificate checks that need no files (names a generated certificate covers,
// SNI names, TLS options).

const test = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { humanSize } = require('../../lib/pipeline/static/listing');
const { mediaType } = require('../../lib/http/headers');
const { wantedNames, validSniName, checkTlsOptions: checkTlsOptionsOf } = require('../../lib/net/certificate');
const { PRODUCT, serverString } = require('../../lib/product');
const { plainAddress } = require('../../lib/http/address-list');

test('humanSize: bytes, then binary units with one decimal below 100', () => {
  assert.equal(humanSize(0), '0 B');
  assert.equal(humanSize(1023), '1023 B');
  assert.equal(humanSize(1024), '1.0 KiB');
  assert.equal(humanSize(5000), '4.9 KiB');
  assert.equal(humanSize(150 * 1024), '150 KiB');
  assert.equal(humanSize(3 * 1024 ** 3), '3.0 GiB');
  assert.equal(humanSize(2048 * 1024 ** 5), '2048 PiB');
});

test('mediaType: the type without parameters, lowercased', () => {
  assert.equal(mediaType('Text/HTML; charset=utf-8'), 'text/html');
  assert.equal(mediaType(' application/json '), 'application/json');
  assert.equal(mediaType(undefined), '');
  assert.equal(mediaType(''), '');
});

test('wantedNames: localhost and loopback, the host name, and the domain when it can be named', () => {
  const values = (config) => wantedNames(config).map((n) => `${n.type}:${n.value}`);
  const base = values({});
  assert.deepEqual(base.slice(0, 3), ['dns:localhost', 'ip:127.0.0.1', 'ip:::1']);
  assert.ok(base.includes(`dns:${os.hostname().toLowerCase()}`) || !/^[a-z0-9_.-]+$/i.test(os.hostname()));
  assert.ok(values({ domain: 'Example.ORG.' }).includes('dns:example.org'));
  assert.ok(values({ domain: '[2001:db8::1]' }).includes('ip:2001:db8::1'));
  assert.deepEqual(values({ domain: 'not a name!' }), base, 'skipped, not an error');
  assert.deepEqual(values({ domain: 'localhost' }), base, 'no duplicates');
});

test('validSniName: host names and one leading wildcard label', () => {
  for (const name of ['example.com', '*.example.com', 'a-b.c_d.example', 'example.com.']) assert.equal(validSniName(name), true, name);
  for (const name of ['', 'a..b', '-a.com', 'a.*.com', 'ex ample.com', 'x'.repeat(254), 5]) assert.equal(validSniName(name), false, String(name));
});

test('checkTlsOptions: versions in order and a cipher list OpenSSL accepts', () => {
  const checkTlsOptions = (config) => checkTlsOptionsOf({ tlsMinVersion: 'TLSv1.2', ...config }); // the schema's default
  assert.deepEqual(checkTlsOptions({}), []);
  assert.deepEqual(checkTlsOptions({ tlsMinVersion: 'TLSv1.3', tlsMaxVersion: 'TLSv1.3' }), []);
  assert.deepEqual(checkTlsOptions({ tlsMinVersion: 'TLSv1.3', tlsMaxVersion: 'TLSv1.2' }),
    ['tlsMaxVersion: TLSv1.2 is below tlsMinVersion TLSv1.3; no handshake could succeed']);
  assert.match(checkTlsOptions({ tlsMinVersion: 'SSLv3' })[0], /^tlsMinVersion: expected one of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3, found "SSLv3"$/);
  assert.match(checkTlsOptions({ cipherSuite: 'NOT-A-CIPHER' })[0], /^cipherSuite: OpenSSL accepts none of "NOT-A-CIPHER"/);
});

test('PRODUCT is the whole Server string by default and its first word with the version', () => {
  assert.equal(PRODUCT, 'svr');
  assert.equal(serverString(false), PRODUCT);
  assert.ok(serverString(true).startsWith(`${PRODUCT}/`));
});

test('plainAddress: an IPv4-mapped IPv6 address as plain IPv4; anything else as it is', () => {
  assert.equal(plainAddress('::ffff:10.1.2.3'), '10.1.2.3');
  assert.equal(plainAddress('::FFFF:127.0.0.1'), '127.0.0.1');
  assert.equal(plainAddress('::ffff:abcd'), '::ffff:abcd', 'not IPv4 after the prefix');
  assert.equal(plainAddress('2001:db8::1'), '2001:db8::1');
  assert.equal(plainAddress(undefined), '');
});
