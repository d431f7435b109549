'use strict';
// HTTPS, HTTP/2, the generated certificate, redirects, SNI and certificate reloads, with real
// clients (Node's https and http2, curl). What the process does (generating or reusing the
// certificate at start, refusing a config, the start banner) runs against real svr processes; what
// a connection or request gets back (the redirect, HSTS, TLS versions, SNI) runs in-process, behind
// the listeners a worker builds (support/pipeline.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const forge = require('node-forge');
const { request, runSvr, makeTempDir, getFreePort } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');
const { startTlsServer, startTlsPipeline, httpsRequest, h2Request, curl, peerCertificate, writePair, fixturePair, seededState } = require('../support/tls-helpers');

const DAY = 24 * 60 * 60 * 1000;

// Writes a raw request on a plain socket; resolves with the whole response as text.
function rawRequest(port, text) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let data = '';
    socket.on('data', (chunk) => { data += chunk.toString('latin1'); });
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

// The plain port of an HTTPS site, in-process: its redirect is a stage list of the pipeline.
// (The HTTPS port is never listened on here; sport only has to name a port.)
async function startRedirect({ config = {} } = {}) {
  const sport = await getFreePort();
  const full = { secure: true, sport, stateDirectory: 'state', ...config };
  const site = await startPipeline({
    config: full,
    files: { 'index.html': 'hello over tls\n', ...seededState(full) },
    plainPortOfHttps: true,
  });
  site.sport = sport;
  return site;
}

function stateFiles(dir) {
  return { cert: path.join(dir, 'selfsigned-cert.pem'), key: path.join(dir, 'selfsigned-key.pem') };
}

test('first start with secure: true generates a self-signed certificate, logs its fingerprint and serves HTTPS with it', async () => {
  const stateDir = path.join(makeTempDir('svr-state-'), 'state'); // not there yet
  const server = await startTlsServer({ stateDir, config: { domain: 'site.example.test' } });
  try {
    const files = stateFiles(stateDir);
    assert.equal(fs.statSync(files.key).mode & 0o777, 0o600, 'key file mode 0600');
    assert.equal(fs.statSync(stateDir).mode & 0o077, 0, 'state directory not open to others');
    const pem = fs.readFileSync(files.cert);
    const x509 = new crypto.X509Certificate(pem);
    for (const name of ['DNS:localhost', 'IP Address:127.0.0.1', 'IP Address:0:0:0:0:0:0:0:1', `DNS:${os.hostname().toLowerCase()}`, 'DNS:site.example.test']) {
      assert.ok(x509.subjectAltName.split(', ').includes(name), `SAN ${name} in ${x509.subjectAltName}`);
    }
    assert.equal(forge.pki.certificateFromPem(pem.toString()).siginfo.algorithmOid, forge.pki.oids.sha256WithRSAEncryption);
    const warning = server.stderr().find((line) => /warn primary: generated a self-signed certificate/.test(line));
    assert.ok(warning, 'a warning says a certificate was generated');
    assert.ok(warning.includes(x509.fingerprint256), 'the warning carries the SHA-256 fingerprint');
    assert.match(server.stderr().join('\n'), new RegExp(`listening on http://(?:\\[::\\]|0\\.0\\.0\\.0):${server.port} and https://(?:\\[::\\]|0\\.0\\.0\\.0):${server.sport}`));

    // a client that trusts exactly this certificate verifies it for "localhost"
    const res = await httpsRequest(`${server.httpsUrl}/`, { ca: pem });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'hello over tls\n');
    assert.equal(res.cert.fingerprint256, x509.fingerprint256);
    assert.equal(res.protocol, 'TLSv1.3');
  } finally {
    await server.stop();
    fs.rmSync(path.dirname(stateDir), { recursive: true, force: true });
  }
});

test('a second start reuses the generated certificate', async () => {
  const stateDir = makeTempDir('svr-state-');
  const first = await startTlsServer({ stateDir });
  const fingerprint = new crypto.X509Certificate(fs.readFileSync(stateFiles(stateDir).cert)).fingerprint256;
  await first.stop();
  const second = await startTlsServer({ stateDir });
  try {
    assert.ok(!second.stderr().some((line) => /generated a self-signed certificate/.test(line)), 'nothing generated');
    assert.ok(second.stderr().some((line) => line.includes('HTTPS uses the self-signed certificate') && line.includes(fingerprint)));
    const cert = await peerCertificate(second.sport, 'localhost');
    assert.equal(cert.fingerprint256, fingerprint);
  } finally {
    await second.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
});

test('a generated certificate that expires within 30 days is replaced at start', async () => {
  const stateDir = makeTempDir('svr-state-');
  const soon = fixturePair({ config: {}, days: 20 });
  const files = stateFiles(stateDir);
  fs.writeFileSync(files.cert, soon.certPem);
  fs.writeFileSync(files.key, soon.keyPem, { mode: 0o600 });
  const old = new crypto.X509Certificate(soon.certPem);
  const server = await startTlsServer({ stateDir });
  try {
    assert.ok(server.stderr().some((line) => /generated a self-signed certificate \(the old one expires on/.test(line)));
    const served = await peerCertificate(server.sport, 'localhost');
    assert.notEqual(served.fingerprint256, old.fingerprint256);
    assert.ok(Date.parse(served.validTo) - Date.now() > 800 * DAY, `valid until ${served.validTo}`);
  } finally {
    await server.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
});

test('a key that does not match the certificate stops the start with an error naming key and files', async () => {
  const dir = makeTempDir();
  const a = writePair(dir, 'a', ['a.test']);
  const b = writePair(dir, 'b', ['b.test']);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), sport: await getFreePort(), secure: true, cert: 'a.crt', key: 'b.key', wwwroot: '.', allowSensitiveFilesInWebRoot: true, workers: 1 }));
  try {
    const started = await runSvr(['--config', configFile]);
    assert.equal(started.code, 78);
    assert.match(started.stderr, new RegExp(`${configFile}: key: ${b.key} does not match the certificate in ${a.cert}`));
    assert.doesNotMatch(started.stderr, /worker \d+ ready/, 'no worker was started');
    const checked = await runSvr(['--config', configFile, '--check']);
    assert.equal(checked.code, 1);
    assert.match(checked.stderr, /: key: .* does not match/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('only the certificate file present: an error naming the key and the missing file', async () => {
  const dir = makeTempDir();
  const a = writePair(dir, 'a', ['a.test']);
  fs.unlinkSync(a.key);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), secure: true, cert: 'a.crt', key: 'a.key', wwwroot: '.', allowSensitiveFilesInWebRoot: true, workers: 1 }));
  try {
    const { code, stderr } = await runSvr(['--config', configFile]);
    assert.equal(code, 78);
    assert.match(stderr, new RegExp(`${configFile}: key: file not found: ${a.key}`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the plain listener redirects to HTTPS with the host, spubport, path and query', async () => {
  const server = await startRedirect();
  try {
    const res = await request(`${server.url}/some/dir/file.txt?x=1&y=%20two`, { headers: { Host: `www.example.test:${server.port}` } });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, `https://www.example.test:${server.sport}/some/dir/file.txt?x=1&y=%20two`);
    const ipv6 = await request(`${server.url}/p`, { headers: { Host: `[::1]:${server.port}` } });
    assert.equal(ipv6.headers.location, `https://[::1]:${server.sport}/p`);
    const bogus = await request(`${server.url}/p`, { headers: { Host: 'evil.test/"><x' } });
    assert.deepEqual([bogus.status, bogus.headers.location], [400, undefined], 'a malformed Host is refused, not echoed');
    const absolute = await rawRequest(server.port, `GET http://abs.example.test/q?x=1 HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n`);
    assert.match(absolute, new RegExp(`\r\nLocation: https://abs\\.example\\.test:${server.sport}/q\\?x=1\r\n`, 'i'));
    const line = await server.waitForLog(/"GET \/some\/dir\/file.txt\?x=1&y=%20two HTTP\/1.1" 301/, 'stdout');
    assert.match(line, /^127\.0\.0\.1 /, 'redirects are in the access log');
  } finally {
    await server.stop();
  }
});

test('the redirect carries Server and customHeaders like every other response', async () => {
  const server = await startRedirect({ config: { customHeaders: { 'X-Site': 'a', 'X-Seen': '{path}' } } });
  try {
    const res = await request(`${server.url}/x?y=1`);
    assert.equal(res.status, 301);
    assert.equal(res.headers.server, 'svr');
    assert.equal(res.headers['x-site'], 'a');
    assert.equal(res.headers['x-seen'], '/x?y=1');
  } finally {
    await server.stop();
  }
});

test('the redirect leaves out port 443 and uses spubport when set', async () => {
  const server = await startRedirect({ config: { spubport: 443 } });
  try {
    const res = await request(`${server.url}/a?b`, { method: 'HEAD', headers: { Host: 'example.test' } });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, 'https://example.test/a?b');
    assert.equal(res.body.length, 0, 'HEAD has no body');
  } finally {
    await server.stop();
  }
});

test('disableToHTTPSRedirect: the plain listener serves the site, without HSTS', async () => {
  const server = await startTlsPipeline({ config: { disableToHTTPSRedirect: true, hstsMaxAge: 600 } });
  try {
    const plain = await request(`${server.url}/`);
    assert.equal(plain.status, 200);
    assert.equal(plain.text, 'hello over tls\n');
    assert.equal(plain.headers['strict-transport-security'], undefined);
    const secure = await httpsRequest(`${server.httpsUrl}/`);
    assert.equal(secure.headers['strict-transport-security'], 'max-age=600');
  } finally {
    await server.stop();
  }
});

test('disableNonEncryptedServer: only the HTTPS port is open', async () => {
  const server = await startTlsServer({ config: { disableNonEncryptedServer: true } });
  try {
    assert.match(server.stderr().join('\n'), new RegExp(`listening on https://(?:\\[::\\]|0\\.0\\.0\\.0):${server.sport} \\(`));
    await assert.rejects(request(`${server.url}/`), { code: 'ECONNREFUSED' });
    const res = await httpsRequest(`${server.httpsUrl}/`);
    assert.equal(res.status, 200);
  } finally {
    await server.stop();
  }
});

test('no HSTS header by default', async () => {
  const server = await startTlsPipeline();
  try {
    const res = await httpsRequest(`${server.httpsUrl}/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['strict-transport-security'], undefined);
  } finally {
    await server.stop();
  }
});

test('TLS versions: 1.2 minimum by default, tlsMinVersion raises it', async () => {
  const server = await startTlsPipeline();
  try {
    assert.equal((await peerCertificate(server.sport, 'localhost', { maxVersion: 'TLSv1.2' })).negotiated, 'TLSv1.2');
    await assert.rejects(peerCertificate(server.sport, 'localhost', { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' }));
  } finally {
    await server.stop();
  }
  const strict = await startTlsPipeline({ config: { tlsMinVersion: 'TLSv1.3' } });
  try {
    await assert.rejects(peerCertificate(strict.sport, 'localhost', { maxVersion: 'TLSv1.2' }));
    assert.equal((await peerCertificate(strict.sport, 'localhost')).negotiated, 'TLSv1.3');
  } finally {
    await strict.stop();
  }
});

test('SNI picks the certificate by host name; others get the default one', async () => {
  const dir = makeTempDir();
  const a = writePair(dir, 'a', ['a.test']);
  const w = writePair(dir, 'w', ['*.w.test']);
  const main = writePair(dir, 'main', ['main.test']);
  const server = await startTlsPipeline({
    config: { cert: main.cert, key: main.key, sni: { 'a.test': { cert: a.cert, key: a.key }, '*.w.test': { cert: w.cert, key: w.key } }, workers: 2 },
  });
  try {
    assert.equal((await peerCertificate(server.sport, 'a.test')).fingerprint256, a.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'A.Test')).fingerprint256, a.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'x.w.test')).fingerprint256, w.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'x.y.w.test')).fingerprint256, main.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'other.test')).fingerprint256, main.fingerprint256);
    // a verifying client asking for a.test gets a certificate valid for a.test
    const res = await httpsRequest(`https://127.0.0.1:${server.sport}/`, { ca: a.certPem, servername: 'a.test', headers: { Host: 'a.test' } });
    assert.equal(res.status, 200);
    assert.ok(!server.stderr().some((line) => /generated a self-signed/.test(line)), 'configured cert: nothing generated');
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a broken sni entry stops the start with an error naming it', async () => {
  const dir = makeTempDir();
  const a = writePair(dir, 'a', ['a.test']);
  const b = writePair(dir, 'b', ['b.test']);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), secure: true, stateDirectory: 'state', sni: { 'b.test': { cert: 'b.crt', key: 'a.key' } }, wwwroot: '.', allowSensitiveFilesInWebRoot: true, workers: 1 }));
  try {
    const { code, stderr } = await runSvr(['--config', configFile]);
    assert.equal(code, 78);
    assert.match(stderr, new RegExp(`${configFile}: sni\\["b\\.test"\\]\\.key: ${a.key} does not match the certificate in ${b.cert}`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('svr.js --check with secure on and no certificate yet: ok, and nothing is generated', async () => {
  const dir = makeTempDir();
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: 8080, secure: true, stateDirectory: 'state', wwwroot: '.', allowSensitiveFilesInWebRoot: true }));
  try {
    const { code, stdout } = await runSvr(['--config', configFile, '--check']);
    assert.equal(code, 0);
    assert.match(stdout, /: ok$/);
    assert.equal(fs.existsSync(path.join(dir, 'state')), false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
