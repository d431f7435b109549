'use strict';

// Unit tests of lib/certificate.js and lib/tls.js (no svr process: these call the
// functions directly; test/net/https.test.js covers the running server).

const test = require('node:test');
const assert = require('node:assert');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const tls = require('tls');
const { spawnSync } = require('child_process');
const forge = require('node-forge');
const certificate = require('../../lib/net/certificate');
const { testKeyPem } = require('../support/test-keys');
const tlsContext = require('../../lib/net/tls-context');
const { unprivilegedUser, schemaDefaults } = require('../support/helpers');

const { generateSelfSigned, stateDirectory, VALIDITY_DAYS } = certificate;
const { sniMatcher } = tlsContext;
// A start hands these the complete config (the schema's defaults applied); the tests name only
// the keys they are about.
const DEFAULTS = schemaDefaults();
const ensureCertificate = (config, options) => certificate.ensureCertificate({ ...DEFAULTS, ...config }, options);
const loadTlsContext = (config, ...rest) => tlsContext.loadTlsContext({ ...DEFAULTS, ...config }, ...rest);

const CONFIG_FILE = '/etc/svr-test/svr-config.json';
const DAY = 24 * 60 * 60 * 1000;

const made = [];
function tmpdir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-cert-'));
  made.push(dir);
  return dir;
}
test.after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

function capture() {
  const lines = { info: [], warn: [], error: [] };
  return {
    lines,
    log: { info: (m) => lines.info.push(m), warn: (m) => lines.warn.push(m), error: (m) => lines.error.push(m) },
  };
}

function writePair(dir, name, opts) {
  // Signed with the run's key for `name` (made once): pairs of different names do not match.
  const { certPem, keyPem } = generateSelfSigned({ keyPem: testKeyPem(name), ...opts });
  const cert = path.join(dir, name + '.crt');
  const key = path.join(dir, name + '.key');
  fs.writeFileSync(cert, certPem);
  fs.writeFileSync(key, keyPem, { mode: 0o600 });
  return { cert, key, certPem, keyPem };
}

const dns = (value) => ({ type: 'dns', value });

test('secure off: nothing is checked or generated', () => {
  const dir = tmpdir();
  const r = ensureCertificate({ secure: false, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  assert.deepStrictEqual(r.errors, []);
  assert.strictEqual(r.certFile, null);
  assert.deepStrictEqual(fs.readdirSync(dir), []);
});

test('first start generates a self-signed certificate as the issue specifies', () => {
  const dir = path.join(tmpdir(), 'state'); // does not exist yet: created
  const { log, lines } = capture();
  const r = ensureCertificate({ secure: true, stateDirectory: dir, domain: 'www.example.test' }, { configFile: CONFIG_FILE, log });
  assert.deepStrictEqual(r.errors, []);
  assert.strictEqual(r.generated, true);
  assert.strictEqual(path.dirname(r.certFile), dir);
  assert.strictEqual(path.dirname(r.keyFile), dir);
  assert.strictEqual(fs.statSync(r.keyFile).mode & 0o777, 0o600, 'key file mode');
  assert.strictEqual(fs.statSync(dir).mode & 0o077, 0, 'state directory closed to others');

  const pem = fs.readFileSync(r.certFile);
  const x509 = new crypto.X509Certificate(pem);
  assert.strictEqual(r.fingerprint256, x509.fingerprint256);
  const sans = x509.subjectAltName.split(', ');
  for (const want of ['DNS:localhost', 'IP Address:127.0.0.1', 'IP Address:0:0:0:0:0:0:0:1',
    'DNS:' + os.hostname().toLowerCase(), 'DNS:www.example.test']) {
    assert.ok(sans.includes(want), `SAN ${want} in ${x509.subjectAltName}`);
  }
  const validity = Date.parse(x509.validTo) - Date.parse(x509.validFrom);
  assert.ok(validity <= VALIDITY_DAYS * DAY, `validity ${validity / DAY} days <= 825`);
  assert.ok(validity > 800 * DAY);
  assert.ok(Date.parse(x509.validFrom) <= Date.now());
  assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(r.keyFile))));
  assert.strictEqual(x509.publicKey.asymmetricKeyDetails.modulusLength, 2048);
  assert.strictEqual(x509.ca, false);
  assert.deepStrictEqual(x509.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extKeyUsage serverAuth');
  assert.ok(x509.verify(x509.publicKey), 'self-signed');

  const f = forge.pki.certificateFromPem(pem.toString());
  assert.strictEqual(f.siginfo.algorithmOid, forge.pki.oids.sha256WithRSAEncryption, 'signed with SHA-256');
  assert.ok(parseInt(f.serialNumber.slice(0, 2), 16) < 0x80, 'serial positive');
  assert.ok(parseInt(f.serialNumber.slice(0, 2), 16) > 0, 'serial minimal DER');
  assert.ok(f.serialNumber.length >= 32, '128-bit serial');
  assert.strictEqual(f.getExtension('basicConstraints').cA, false);

  assert.strictEqual(lines.warn.length, 1);
  assert.ok(lines.warn[0].includes(x509.fingerprint256), 'fingerprint logged: ' + lines.warn[0]);
  assert.ok(lines.warn[0].includes(r.certFile));
});

test('two generations have different keys and serials', () => {
  const a = generateSelfSigned({ names: [dns('localhost')] });
  const b = generateSelfSigned({ names: [dns('localhost')] });
  const xa = new crypto.X509Certificate(a.certPem);
  const xb = new crypto.X509Certificate(b.certPem);
  assert.notStrictEqual(xa.serialNumber, xb.serialNumber);
  assert.notStrictEqual(xa.fingerprint256, xb.fingerprint256);
});

test('a later start reuses the certificate', () => {
  const dir = tmpdir();
  const first = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const before = fs.readFileSync(first.certFile);
  const { log, lines } = capture();
  const second = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log });
  assert.deepStrictEqual(second.errors, []);
  assert.strictEqual(second.generated, false);
  assert.strictEqual(second.fingerprint256, first.fingerprint256);
  assert.ok(fs.readFileSync(second.certFile).equals(before));
  assert.strictEqual(lines.warn.length, 0);
  assert.ok(lines.info.some((l) => l.includes(first.fingerprint256)));
});

test('a certificate expiring within 30 days is regenerated', () => {
  const dir = tmpdir();
  const r0 = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  // replace it by one that expires in 10 days
  const soon = generateSelfSigned({ config: {}, days: 10, keyPem: testKeyPem() });
  fs.writeFileSync(r0.certFile, soon.certPem);
  fs.writeFileSync(r0.keyFile, soon.keyPem);
  const old = new crypto.X509Certificate(soon.certPem);
  const { log, lines } = capture();
  const r = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log });
  assert.deepStrictEqual(r.errors, []);
  assert.strictEqual(r.generated, true);
  assert.notStrictEqual(r.fingerprint256, old.fingerprint256);
  const fresh = new crypto.X509Certificate(fs.readFileSync(r.certFile));
  assert.ok(Date.parse(fresh.validTo) - Date.now() > 800 * DAY);
  assert.match(lines.warn[0], /expires on/);
  assert.strictEqual(fs.statSync(r.keyFile).mode & 0o777, 0o600);
});

test('a certificate with 40 days left is kept', () => {
  const dir = tmpdir();
  const r0 = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const later = generateSelfSigned({ config: {}, days: 40, keyPem: testKeyPem() });
  fs.writeFileSync(r0.certFile, later.certPem);
  fs.writeFileSync(r0.keyFile, later.keyPem);
  const r = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.generated, false);
  assert.strictEqual(r.fingerprint256, new crypto.X509Certificate(later.certPem).fingerprint256);
});

test('an expired generated certificate is regenerated', () => {
  const dir = tmpdir();
  const r0 = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const expired = generateSelfSigned({ config: {}, notBefore: Date.now() - 20 * DAY, days: 10, keyPem: testKeyPem() });
  fs.writeFileSync(r0.certFile, expired.certPem);
  fs.writeFileSync(r0.keyFile, expired.keyPem);
  const { log, lines } = capture();
  const r = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log });
  assert.strictEqual(r.generated, true);
  assert.match(lines.warn[0], /expired on/);
});

test('setting a domain later regenerates so the certificate names it', () => {
  const dir = tmpdir();
  ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const r = ensureCertificate({ secure: true, stateDirectory: dir, domain: 'new.example.test' }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.generated, true);
  assert.match(new crypto.X509Certificate(fs.readFileSync(r.certFile)).subjectAltName, /DNS:new\.example\.test/);
});

test('configured cert and key that match are used as they are', () => {
  const dir = tmpdir();
  const p = writePair(dir, 'site', { names: [dns('site.test')] });
  const state = path.join(dir, 'state');
  const r = ensureCertificate({ secure: true, cert: p.cert, key: p.key, stateDirectory: state }, { configFile: CONFIG_FILE, log: capture().log });
  assert.deepStrictEqual(r.errors, []);
  assert.strictEqual(r.certFile, p.cert);
  assert.strictEqual(r.keyFile, p.key);
  assert.strictEqual(r.generated, false);
  assert.strictEqual(fs.existsSync(state), false, 'nothing generated');
});

test('a key that does not match the certificate is an error naming key and both files', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  const b = writePair(dir, 'b', { names: [dns('b.test')] });
  const r = ensureCertificate({ secure: true, cert: a.cert, key: b.key }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 1);
  assert.ok(r.errors[0].startsWith(CONFIG_FILE + ': key: '), r.errors[0]);
  assert.ok(r.errors[0].includes(b.key) && r.errors[0].includes(a.cert), r.errors[0]);
  assert.match(r.errors[0], /does not match/);
});

test('only one of cert and key configured is an error', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  let r = ensureCertificate({ secure: true, cert: a.cert }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 1);
  assert.ok(r.errors[0].startsWith(CONFIG_FILE + ': key: missing'), r.errors[0]);
  r = ensureCertificate({ secure: true, key: a.key }, { configFile: CONFIG_FILE, log: capture().log });
  assert.ok(r.errors[0].startsWith(CONFIG_FILE + ': cert: missing'), r.errors[0]);
});

test('only one of the two files present is an error naming the missing one', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  fs.unlinkSync(a.key);
  const r = ensureCertificate({ secure: true, cert: a.cert, key: a.key, stateDirectory: path.join(dir, 's') }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 1);
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: key: file not found: ${a.key}`), r.errors[0]);
  assert.strictEqual(fs.existsSync(path.join(dir, 's')), false, 'no certificate generated');
});

test('configured files both missing: errors, no generation (a typo must not become a self-signed certificate)', () => {
  const dir = tmpdir();
  const r = ensureCertificate({ secure: true, cert: path.join(dir, 'no.crt'), key: path.join(dir, 'no.key'), stateDirectory: path.join(dir, 's') },
    { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 2);
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: cert: cannot read ${path.join(dir, 'no.crt')}: file not found`), r.errors[0]);
  assert.ok(r.errors[1].startsWith(`${CONFIG_FILE}: key: cannot read ${path.join(dir, 'no.key')}: file not found`), r.errors[1]);
  assert.strictEqual(fs.existsSync(path.join(dir, 's')), false);
});

test('an unreadable file is an error naming the key and the file', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  const notAFile = path.join(dir, 'certdir');
  fs.mkdirSync(notAFile);
  const r = ensureCertificate({ secure: true, cert: notAFile, key: a.key }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 1);
  assert.strictEqual(r.errors[0], `${CONFIG_FILE}: cert: cannot read ${notAFile}: is a directory, expected a PEM file`);
});

// ensureCertificate in a child process run as `user` (spawn's { uid, gid }): root reads any file,
// so as root (CI) the check runs as nobody.
function ensureCertificateAs(user, config) {
  const script = `const { ensureCertificate } = require(${JSON.stringify(require.resolve('../../lib/net/certificate'))});
const quiet = { info() {}, warn() {}, error() {} };
const { errors } = ensureCertificate(${JSON.stringify({ ...DEFAULTS, ...config })}, { configFile: ${JSON.stringify(CONFIG_FILE)}, log: quiet });
process.stdout.write(JSON.stringify({ errors }));`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: os.tmpdir(), ...user });
  assert.strictEqual(child.status, 0, child.stderr);
  return JSON.parse(child.stdout);
}

const unprivileged = unprivilegedUser();
test('a key file without read permission is an error', { skip: unprivileged.skip ?? false }, () => {
  const dir = tmpdir();
  fs.chmodSync(dir, 0o755); // the certificate stays readable to the unprivileged user
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  fs.chmodSync(a.key, 0);
  const r = ensureCertificateAs(unprivileged.user, { secure: true, cert: a.cert, key: a.key });
  assert.strictEqual(r.errors[0], `${CONFIG_FILE}: key: cannot read ${a.key}: permission denied`);
});

test('files that are not PEM are errors', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  fs.writeFileSync(a.cert, 'hello');
  fs.writeFileSync(a.key, a.certPem);
  const r = ensureCertificate({ secure: true, cert: a.cert, key: a.key }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 2);
  assert.match(r.errors[0], /: cert: .* is not a PEM certificate/);
  assert.match(r.errors[1], /: key: .* is not a valid PEM private key/);
});

test('an encrypted key is an error saying so', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  const enc = crypto.createPrivateKey(a.keyPem).export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' });
  fs.writeFileSync(a.key, enc);
  const r = ensureCertificate({ secure: true, cert: a.cert, key: a.key }, { configFile: CONFIG_FILE, log: capture().log });
  assert.match(r.errors[0], /: key: .* is encrypted/);
});

test('a configured certificate close to expiry is kept, with a warning (never overwritten)', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')], days: 5 });
  const { log, lines } = capture();
  const r = ensureCertificate({ secure: true, cert: a.cert, key: a.key }, { configFile: CONFIG_FILE, log });
  assert.deepStrictEqual(r.errors, []);
  assert.strictEqual(r.generated, false);
  assert.strictEqual(fs.readFileSync(a.cert, 'utf8'), a.certPem);
  assert.match(lines.warn[0], /expires on/);
});

test('sni entries are checked: bad pattern, mismatched key, missing file', () => {
  const dir = tmpdir();
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  const b = writePair(dir, 'b', { names: [dns('b.test')] });
  const r = ensureCertificate({
    secure: true,
    stateDirectory: path.join(dir, 's'),
    sni: {
      'a.test': { cert: a.cert, key: a.key },
      '*.*.test': { cert: a.cert, key: a.key },
      'b.test': { cert: b.cert, key: a.key },
      'c.test': { cert: path.join(dir, 'c.crt'), key: a.key },
      'd.test': { cert: a.cert },
    },
  }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 4, r.errors.join('\n'));
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: sni["*.*.test"]: expected a host name`), r.errors[0]);
  assert.ok(r.errors[1].startsWith(`${CONFIG_FILE}: sni["b.test"].key: ${a.key} does not match`), r.errors[1]);
  assert.ok(r.errors[2].startsWith(`${CONFIG_FILE}: sni["c.test"].cert: cannot read`), r.errors[2]);
  assert.ok(r.errors[3].startsWith(`${CONFIG_FILE}: sni["d.test"]: expected {"cert"`), r.errors[3]);
});

test('TLS option errors: unknown cipher list, max below min', () => {
  const dir = tmpdir();
  let r = ensureCertificate({ secure: true, stateDirectory: dir, cipherSuite: 'NOT-A-CIPHER' }, { configFile: CONFIG_FILE, log: capture().log });
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: cipherSuite: OpenSSL accepts none of "NOT-A-CIPHER"`), r.errors[0]);
  r = ensureCertificate({ secure: true, stateDirectory: dir, tlsMinVersion: 'TLSv1.3', tlsMaxVersion: 'TLSv1.2' }, { configFile: CONFIG_FILE, log: capture().log });
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: tlsMaxVersion: TLSv1.2 is below tlsMinVersion TLSv1.3`), r.errors[0]);
});

test('state directory: config, then $STATE_DIRECTORY (first of a list), then state/ next to svr.js', () => {
  assert.strictEqual(stateDirectory({ stateDirectory: '/srv/x' }, { STATE_DIRECTORY: '/var/lib/svr' }), '/srv/x');
  assert.strictEqual(stateDirectory({}, { STATE_DIRECTORY: '/var/lib/svr:/var/lib/other' }), '/var/lib/svr');
  assert.strictEqual(stateDirectory({ stateDirectory: null }, {}), path.join(__dirname, '..', '..', 'state'));
});

test('an unwritable state directory is an error naming stateDirectory', () => {
  const dir = tmpdir();
  const file = path.join(dir, 'plainfile');
  fs.writeFileSync(file, '');
  const r = ensureCertificate({ secure: true, stateDirectory: path.join(file, 'sub') }, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(r.errors.length, 1);
  assert.ok(r.errors[0].startsWith(`${CONFIG_FILE}: stateDirectory: cannot write the self-signed certificate into ${path.join(file, 'sub')}`), r.errors[0]);
});

test('sniMatcher: exact names, one-label wildcards, case and trailing dot', () => {
  const m = sniMatcher([['a.test', 'A'], ['*.w.test', 'W'], ['W.test', 'X']]);
  assert.strictEqual(m('a.test'), 'A');
  assert.strictEqual(m('A.TEST.'), 'A');
  assert.strictEqual(m('x.w.test'), 'W');
  assert.strictEqual(m('w.test'), 'X');
  assert.strictEqual(m('x.y.w.test'), null);
  assert.strictEqual(m('b.test'), null);
  assert.strictEqual(m(undefined), null);
});

function peerFingerprint(port, servername, extra = {}) {
  return new Promise((resolve, reject) => {
    const s = tls.connect(Object.assign({ port, host: '127.0.0.1', servername, rejectUnauthorized: false }, extra), () => {
      const fp = s.getPeerX509Certificate().fingerprint256;
      const proto = s.getProtocol();
      s.end();
      resolve({ fp, proto });
    });
    s.on('error', reject);
  });
}

test('loadTlsContext: default certificate, SNI picks the right one, TLS 1.2 minimum', async (t) => {
  const dir = tmpdir();
  const main = ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const a = writePair(dir, 'a', { names: [dns('a.test')] });
  const w = writePair(dir, 'w', { names: [dns('*.w.test')] });
  const config = { secure: true, stateDirectory: dir, sni: { 'a.test': { cert: a.cert, key: a.key }, '*.w.test': { cert: w.cert, key: w.key } } };
  const opts = loadTlsContext(config);
  assert.strictEqual(opts.minVersion, 'TLSv1.2');
  const server = tls.createServer(opts, (s) => s.end());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = server.address().port;
  const fpA = new crypto.X509Certificate(a.certPem).fingerprint256;
  const fpW = new crypto.X509Certificate(w.certPem).fingerprint256;
  assert.strictEqual((await peerFingerprint(port, 'a.test')).fp, fpA);
  assert.strictEqual((await peerFingerprint(port, 'x.w.test')).fp, fpW);
  assert.strictEqual((await peerFingerprint(port, 'other.test')).fp, main.fingerprint256);
  assert.strictEqual((await peerFingerprint(port, 'localhost')).fp, main.fingerprint256);
  await assert.rejects(peerFingerprint(port, 'a.test', { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }));
});

test('loadTlsContext: tlsMaxVersion and cipherSuite reach the handshake', async (t) => {
  const dir = tmpdir();
  ensureCertificate({ secure: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  const opts = loadTlsContext({ secure: true, stateDirectory: dir, tlsMaxVersion: 'TLSv1.2', cipherSuite: 'ECDHE-RSA-AES256-GCM-SHA384' });
  const server = tls.createServer(opts, (s) => s.end());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = server.address().port;
  const got = await new Promise((resolve, reject) => {
    const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => {
      resolve({ proto: s.getProtocol(), cipher: s.getCipher().name });
      s.end();
    });
    s.on('error', reject);
  });
  assert.deepStrictEqual(got, { proto: 'TLSv1.2', cipher: 'ECDHE-RSA-AES256-GCM-SHA384' });
});

test('sport equal to port is an error unless the plain listener is off', () => {
  const dir = tmpdir();
  const r = ensureCertificate({ secure: true, port: 8443, sport: 8443, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  assert.deepStrictEqual(r.errors, [`${CONFIG_FILE}: sport: 8443 is also "port"; HTTP and HTTPS need two ports (or set "disableNonEncryptedServer": true)`]);
  const off = ensureCertificate({ secure: true, port: 8443, sport: 8443, disableNonEncryptedServer: true, stateDirectory: dir }, { configFile: CONFIG_FILE, log: capture().log });
  assert.deepStrictEqual(off.errors, []);
});

test('renewalDue: generated certificate due within 30 days or gone; configured ones never (a warning instead)', () => {
  const { renewalDue } = require('../../lib/net/certificate');
  const dir = tmpdir();
  const config = { secure: true, stateDirectory: dir };
  assert.strictEqual(renewalDue(config, { log: capture().log }), true, 'nothing there yet');
  const r = ensureCertificate(config, { configFile: CONFIG_FILE, log: capture().log });
  assert.strictEqual(renewalDue(config, { log: capture().log }), false);
  assert.strictEqual(renewalDue(config, { now: Date.now() + 800 * DAY, log: capture().log }), true);
  assert.strictEqual(renewalDue({ secure: false }), false);
  const { log, lines } = capture();
  assert.strictEqual(renewalDue({ secure: true, cert: r.certFile, key: r.keyFile }, { now: Date.now() + 800 * DAY, log }), false);
  assert.match(lines.warn[0], /expires on .*renew it and reload/);
});
