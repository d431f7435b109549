'use strict';
// The parts of ACME that need no CA: the shared-directory lock, the renewal schedule and backoff,
// the ClientHello reader of TLS-ALPN-01, the DER pieces (CSR, validation certificate, RFC 9773's
// certificate identifier), the HTTP-01 answers.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const tls = require('node:tls');
const { makeTempDir } = require('../support/helpers');
const { acquire } = require('../../lib/acme/lock');
const schedule = require('../../lib/acme/schedule');
const { parseClientHello } = require('../../lib/net/acme-alpn');
const der = require('../../lib/acme/der');
const keys = require('../../lib/acme/keys');
const { ariCertId } = require('../../lib/acme/client');
const { ChallengeAnswers } = require('../../lib/acme/challenges');

test('lock: a second acquirer waits for the release', async () => {
  const file = path.join(makeTempDir(), 'locks', 'a.lock');
  const release = await acquire(file, { timeoutMs: 60000, pollMs: 10 });
  let second = null;
  const waiting = acquire(file, { timeoutMs: 60000, pollMs: 10 }).then((r) => { second = r; });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(second, null, 'still waiting while the lock is held');
  release();
  await waiting;
  assert.equal(typeof second, 'function');
  second();
  assert.equal(fs.existsSync(file), false);
});

test('lock: a holder that crashed (file untouched for the timeout) is taken over', async () => {
  const file = path.join(makeTempDir(), 'locks', 'b.lock');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ pid: 999999, host: 'gone', token: 'old' }));
  const old = new Date(Date.now() - 120000);
  fs.utimesSync(file, old, old);
  const startedAt = Date.now();
  const release = await acquire(file, { timeoutMs: 60000, pollMs: 10 });
  assert.ok(Date.now() - startedAt < 30000, 'taken over at once, not after waiting out the timeout');
  assert.notEqual(JSON.parse(fs.readFileSync(file, 'utf8')).token, 'old');
  release();
});

test('lock: a live holder keeps its lock past the timeout; a waiter gives up after waitMs', async () => {
  const file = path.join(makeTempDir(), 'locks', 'c.lock');
  // The holder touches its file every third of the timeout; the waiter waits three timeouts.
  const release = await acquire(file, { timeoutMs: 1000, pollMs: 10 });
  await assert.rejects(acquire(file, { timeoutMs: 1000, waitMs: 3000, pollMs: 50 }), /is held by process \d+/);
  release();
});

test('schedule: two thirds of the lifetime without ARI; inside the window with it', () => {
  const x509 = { validFrom: 'Jan  1 00:00:00 2026 GMT', validTo: 'Apr  1 00:00:00 2026 GMT' }; // 90 days
  const from = Date.parse(x509.validFrom);
  assert.equal(schedule.renewAt(x509, null), from + 60 * 86400000);
  const window = { start: from + 50 * 86400000, end: from + 52 * 86400000 };
  const pick = schedule.pickInWindow(window.start, window.end, () => 0.5);
  assert.equal(pick, from + 51 * 86400000);
  assert.equal(schedule.renewAt(x509, { ...window, pick }), pick);
  assert.equal(schedule.renewAt(x509, { ...window, pick: window.end + 1 }), window.start, 'a pick outside a new window is not used');
});

test('schedule: retries 5 min, 10, 20 ... doubling up to the 12 h bound', () => {
  const minutes = [1, 2, 3, 4, 5].map((n) => schedule.retryDelay(n) / 60000);
  assert.deepEqual(minutes, [5, 10, 20, 40, 80]);
  // The 8th failure would be 640 min: it is held at 720 (12 h), and so is every later one.
  assert.equal(schedule.retryDelay(8), 640 * 60000);
  assert.equal(schedule.retryDelay(9), schedule.RETRY_CAP_MS);
  assert.equal(schedule.retryDelay(100), 12 * 3600000);
  // Let's Encrypt allows 5 failed validations per name per hour: the first hour has at most 4 attempts.
  let at = 0;
  let attempts = 1;
  for (let n = 1; at + schedule.retryDelay(n) < 3600000; n++) { at += schedule.retryDelay(n); attempts++; }
  assert.equal(attempts, 4);
});

test('the ClientHello reader finds the server name and the ALPN protocols', async () => {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const first = new Promise((resolve) => server.once('connection', (socket) => socket.once('data', (chunk) => { resolve(chunk); socket.destroy(); })));
  const client = tls.connect({ host: '127.0.0.1', port: server.address().port, servername: 'a.example', ALPNProtocols: ['acme-tls/1'] });
  client.on('error', () => {});
  const hello = await first;
  server.close();
  assert.deepEqual(parseClientHello(hello), { servername: 'a.example', alpn: ['acme-tls/1'] });
  assert.equal(parseClientHello(hello.subarray(0, 20)), undefined, 'a partial record: wait for more');
  assert.equal(parseClientHello(Buffer.from('GET / HTTP/1.1\r\n')), null, 'not TLS');
});

test('the TLS-ALPN-01 certificate names the domain and holds the SHA-256 of the key authorization, critical', () => {
  const { cert, key } = keys.alpnCertificate('a.example', 'token.thumbprint');
  const x509 = new crypto.X509Certificate(cert);
  assert.equal(x509.subjectAltName, 'DNS:a.example');
  assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(key)));
  const digest = crypto.createHash('sha256').update('token.thumbprint').digest();
  // extension: SEQUENCE { OID 1.3.6.1.5.5.7.1.31, BOOLEAN TRUE, OCTET STRING { OCTET STRING digest } }
  const expected = Buffer.concat([der.oid('1.3.6.1.5.5.7.1.31'), der.boolean(true), der.octetString(der.octetString(digest))]);
  assert.ok(x509.raw.includes(expected));
});

test('the CSR is signed by the key and lists every name', () => {
  for (const type of ['ec-p256', 'ec-p384', 'rsa-2048']) {
    const key = keys.generateKey(type);
    const csr = keys.certificateRequest(key, ['a.example', 'b.example']);
    const [info, , signature] = der.children(csr, der.read(csr));
    const signed = csr.subarray(der.read(csr).start, info.next);
    const bits = csr.subarray(signature.start + 1, signature.end);
    assert.ok(crypto.verify(type === 'ec-p384' ? 'sha384' : 'sha256', signed, crypto.createPublicKey(key), bits), type);
    assert.ok(csr.includes(Buffer.from('a.example')) && csr.includes(Buffer.from('b.example')));
  }
});

test("the certificate's ARI identifier is RFC 9773's: base64url(AKI keyIdentifier).base64url(serial)", () => {
  // RFC 9773 §4.1's example: keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4, serial 00:87:65:43:21.
  const aki = der.sequence(der.oid('2.5.29.35'), der.octetString(der.sequence(der.implicit(0, Buffer.from('69885B6B87464041E1B37B847BA0AE2CDE01C8D4', 'hex')))));
  const key = keys.generateKey();
  const alg = der.sequence(der.oid('1.2.840.10045.4.3.2'));
  const name = der.sequence(der.set(der.sequence(der.oid('2.5.4.3'), der.utf8String('x'))));
  const tbs = der.sequence(der.explicit(0, der.integer([2])), der.integer(Buffer.from('0087654321', 'hex')), alg, name,
    der.sequence(der.time(new Date()), der.time(new Date())), name, crypto.createPublicKey(key).export({ type: 'spki', format: 'der' }),
    der.explicit(3, der.sequence(aki)));
  const cert = der.sequence(tbs, alg, der.bitString(crypto.sign('sha256', tbs, key)));
  assert.equal(ariCertId(cert), 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE');
});

test('the names: domain, then the virtual hosts and SNI names that are exact DNS names; acme.domains replaces them', () => {
  const { acmeSettings } = require('../../lib/acme/settings');
  const config = {
    domain: 'Example.com',
    wwwrootVHost: [{ host: 'blog.example.com', wwwroot: 'b' }, { host: '*.example.org', wwwroot: 'w' }, { host: 'example.net:8080', wwwroot: 'p' }, { wwwroot: 'all' }],
    sni: { 'shop.example.com': { cert: 'c', key: 'k' }, '*.example.com': { cert: 'c', key: 'k' } },
    acme: {},
  };
  assert.deepEqual(acmeSettings(config).names, ['example.com', 'blog.example.com', 'shop.example.com']);
  assert.equal(acmeSettings(config).certName, 'example.com');
  assert.deepEqual(acmeSettings({ ...config, acme: { domains: ['a.example', 'b.example'] } }).names, ['a.example', 'b.example']);
  assert.equal(acmeSettings({ domain: 'x.example', acme: null }), null);
  assert.deepEqual(acmeSettings({ domain: '10.0.0.1', acme: {} }).names, [], 'an IP address is not a DNS name');
});

// Any client may ask for any token, before access rules and rate limits: a token not in memory is
// looked for in the shared state directory without a synchronous read (one blocking open per
// request, on a network file system a round trip with the worker stopped).
test('HTTP-01: tokens from memory and the shared directory; an unknown one costs no synchronous read', async (t) => {
  const root = makeTempDir();
  const answers = new ChallengeAnswers(root);
  answers.add({ type: 'http-01', token: 'mine', identifier: 'a.test', keyAuthorization: 'mine.k' });
  const dir = path.join(root, 'challenges', 'http-01');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'theirs.json'), JSON.stringify({ type: 'http-01', token: 'theirs', identifier: 'b.test', keyAuthorization: 'theirs.k' }));
  const readFileSync = fs.readFileSync;
  let syncReads = 0;
  fs.readFileSync = (...args) => { syncReads++; return readFileSync(...args); };
  t.after(() => { fs.readFileSync = readFileSync; });
  assert.equal(await answers.http01('mine', 'A.test'), 'mine.k');
  assert.equal(await answers.http01('theirs', 'b.test'), 'theirs.k');
  assert.equal(await answers.http01('theirs', 'a.test'), null, 'a token for another host');
  assert.equal(await answers.http01('unknown', 'a.test'), null);
  assert.equal(await answers.http01('../x', 'a.test'), null, 'no token');
  assert.equal(syncReads, 0);
});
