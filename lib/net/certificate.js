'use strict';

// Certificates for HTTPS: validation of the configured PEM files and, when HTTPS
// is on and no certificate is configured, a self-signed certificate made once in
// the primary (before forking) (laid out by node-forge, signed by Node's crypto), kept in the state directory and
// renewed when it gets close to expiry.
//
// ensureCertificate(config, { configFile, log, checkOnly, now, env })
//   -> { certFile, keyFile, generated, fingerprint256, errors }
//   errors are strings in the config validator's style: `FILE: cert: ...`.
//   checkOnly (svr.js --check): validate what is there, generate nothing.

// Required when first used: a worker without HTTPS or auth never loads it (start-up time).
let cryptoModule = null;
const crypto = () => (cryptoModule ??= require('crypto'));
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');

const DAY = 24 * 60 * 60 * 1000;
const VALIDITY_DAYS = 825; // the most browsers accept for a TLS server certificate
const RENEW_BEFORE_DAYS = 30;
const CERT_NAME = 'selfsigned-cert.pem';
const KEY_NAME = 'selfsigned-key.pem';
const { stateDirectory } = require('../product');
const defaultLog = require('../log');

function selfSignedPaths(config, env) {
  const dir = stateDirectory(config, env);
  return { dir, certFile: path.join(dir, CERT_NAME), keyFile: path.join(dir, KEY_NAME) };
}

// The names the generated certificate must cover.
function wantedNames(config) {
  const names = [{ type: 'dns', value: 'localhost' }, { type: 'ip', value: '127.0.0.1' }, { type: 'ip', value: '::1' }];
  const add = (name) => {
    if (typeof name !== 'string') return;
    name = name.trim().toLowerCase().replace(/\.$/, '');
    if (name.startsWith('[') && name.endsWith(']')) name = name.slice(1, -1);
    if (!name) return;
    let entry;
    if (net.isIP(name)) entry = { type: 'ip', value: name };
    else if (/^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(name)) entry = { type: 'dns', value: name };
    else return; // not something a certificate can name; skip rather than fail
    if (!names.some((n) => n.type === entry.type && n.value === entry.value)) names.push(entry);
  };
  add(os.hostname());
  if (config && config.domain) add(config.domain);
  return names;
}

// "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1" -> [{type, value}]
function parseSubjectAltName(san) {
  if (!san) return [];
  return san.split(/,\s*/).map((part) => {
    const i = part.indexOf(':');
    const kind = part.slice(0, i);
    const value = part.slice(i + 1);
    if (kind === 'DNS') return { type: 'dns', value: value.toLowerCase() };
    if (kind === 'IP Address') return { type: 'ip', value: normaliseIp(value) };
    return { type: kind, value };
  });
}

function normaliseIp(ip) {
  if (net.isIPv6(ip)) {
    // expand then re-compress through the URL parser: 0:0:0:0:0:0:0:1 -> ::1
    try { return new URL('http://[' + ip + ']/').hostname.slice(1, -1); } catch { return ip; }
  }
  return ip;
}

function randomSerial() {
  const bytes = crypto().randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01; // positive, and minimal DER (no leading zero byte)
  return bytes.toString('hex');
}

// Make a self-signed server certificate. Options are for tests (a short-lived
// certificate to exercise renewal, a key made once and reused); the server always uses the
// defaults. The key is made and the certificate signed by Node's crypto: node-forge only lays out
// the certificate (signing in its JavaScript RSA took ~90 ms of the ~175 of a 2048-bit pair).
function generateSelfSigned(opts = {}) {
  const forge = require('node-forge');
  const names = opts.names || wantedNames(opts.config || {});
  const privateKey = opts.keyPem
    ? crypto().createPrivateKey(opts.keyPem)
    : crypto().generateKeyPairSync('rsa', { modulusLength: opts.bits || 2048, publicExponent: 0x10001 }).privateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(crypto().createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }));
  cert.serialNumber = randomSerial();
  const notBefore = new Date(opts.notBefore !== undefined ? opts.notBefore : Date.now() - 60 * 60 * 1000);
  notBefore.setUTCMilliseconds(0);
  const days = Math.min(opts.days !== undefined ? opts.days : VALIDITY_DAYS, VALIDITY_DAYS);
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(notBefore.getTime() + days * DAY);
  const commonName = (names.find((n) => n.type === 'dns' && n.value !== 'localhost') || names[0]).value;
  const attrs = [{ name: 'commonName', value: commonName }, { name: 'organizationName', value: 'svr self-signed' }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: names.map((n) => (n.type === 'ip' ? { type: 7, ip: n.value } : { type: 2, value: n.value })),
    },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(nativeSigner(privateKey), forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(cert);
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  return { certPem, keyPem };
}

// What forge's cert.sign(key, md) needs of `key`: sign(md) -> the RSASSA-PKCS1-v1_5 signature of
// md's digest as a binary string. That signature is the private-key operation on the DigestInfo
// (the algorithm's DER prefix, then the digest), which privateEncrypt with PKCS#1 padding does.
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');
function nativeSigner(privateKey) {
  return {
    sign(md) {
      const digest = Buffer.from(md.digest().getBytes(), 'binary');
      const padding = crypto().constants.RSA_PKCS1_PADDING;
      return crypto().privateEncrypt({ key: privateKey, padding }, Buffer.concat([SHA256_DIGEST_INFO, digest])).toString('binary');
    },
  };
}

// Write atomically (temp file + rename) so a reader never sees half a file.
function writeFileAtomic(file, data, mode) {
  const tmp = file + '.tmp-' + process.pid + '-' + crypto().randomBytes(4).toString('hex');
  try {
    fs.writeFileSync(tmp, data, { mode, flag: 'wx' });
    fs.chmodSync(tmp, mode); // in case the umask took bits away we meant to keep
    fs.renameSync(tmp, file);
  } catch (err) {
    try { fs.unlinkSync(tmp); } catch { /* not there */ }
    throw err;
  }
}

function describeFsError(err) {
  switch (err.code) {
    case 'ENOENT': return 'file not found';
    case 'EACCES': case 'EPERM': return 'permission denied';
    case 'EISDIR': return 'is a directory, expected a PEM file';
    case 'ENOTDIR': return 'a parent of it is not a directory';
    default: return err.code || err.message;
  }
}

// Read and check one certificate/key pair. `label` gives the config key paths
// used in error messages, e.g. { cert: 'cert', key: 'key' }.
function checkPair(certFile, keyFile, label) {
  const errors = [];
  let certPem, keyPem, x509, keyObject;
  try {
    certPem = fs.readFileSync(certFile);
  } catch (err) {
    errors.push(`${label.cert}: cannot read ${certFile}: ${describeFsError(err)}`);
  }
  try {
    keyPem = fs.readFileSync(keyFile);
  } catch (err) {
    errors.push(`${label.key}: cannot read ${keyFile}: ${describeFsError(err)}`);
  }
  if (certPem) {
    if (!certPem.includes('-----BEGIN CERTIFICATE-----')) {
      errors.push(`${label.cert}: ${certFile} is not a PEM certificate (expected "-----BEGIN CERTIFICATE-----")`);
    } else {
      try {
        x509 = new (crypto().X509Certificate)(certPem);
      } catch (err) {
        errors.push(`${label.cert}: ${certFile} is not a valid PEM certificate (${err.message})`);
      }
    }
  }
  if (keyPem) {
    try {
      keyObject = crypto().createPrivateKey(keyPem);
    } catch (err) {
      const encrypted = err.code === 'ERR_MISSING_PASSPHRASE' ||
        /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(keyPem.toString('latin1'));
      errors.push(encrypted
        ? `${label.key}: ${keyFile} is encrypted; svr needs an unencrypted PEM private key`
        : `${label.key}: ${keyFile} is not a valid PEM private key (${err.message})`);
    }
  }
  if (x509 && keyObject && !x509.checkPrivateKey(keyObject)) {
    errors.push(`${label.key}: ${keyFile} does not match the certificate in ${certFile} (their public keys differ)`);
  }
  if (errors.length === 0) {
    try {
      require('tls').createSecureContext({ cert: certPem, key: keyPem });
    } catch (err) {
      errors.push(`${label.cert}: ${certFile} with ${label.key} ${keyFile} is not usable for TLS (${err.message})`);
    }
  }
  return { errors, x509, certPem, keyPem };
}

function quoteKey(k) {
  return /^[A-Za-z_$][\w$]*$/.test(k) ? '.' + k : '[' + JSON.stringify(k) + ']';
}

// `host`, `*.domain`; a `*` only as the whole first label (and only one), as in RFC 6125.
function validSniName(name) {
  return typeof name === 'string' &&
    /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/i.test(name) &&
    name.length <= 253;
}

// TLS protocol options shared by the default and the SNI contexts.
function versionOptions(config) {
  const o = { minVersion: config.tlsMinVersion };
  if (config.tlsMaxVersion) o.maxVersion = config.tlsMaxVersion;
  if (config.cipherSuite) o.ciphers = config.cipherSuite;
  if (config.ecdhCurve) o.ecdhCurve = config.ecdhCurve;
  if (config.signatureAlgorithms) o.sigalgs = config.signatureAlgorithms;
  return o;
}

const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

function checkTlsOptions(config) {
  const errors = [];
  const o = versionOptions(config);
  if (!TLS_VERSIONS.includes(o.minVersion)) {
    errors.push(`tlsMinVersion: expected one of ${TLS_VERSIONS.join(', ')}, found ${JSON.stringify(o.minVersion)}`);
  }
  if (o.maxVersion !== undefined && !TLS_VERSIONS.includes(o.maxVersion)) {
    errors.push(`tlsMaxVersion: expected one of ${TLS_VERSIONS.join(', ')}, found ${JSON.stringify(o.maxVersion)}`);
  }
  if (!errors.length && o.maxVersion && TLS_VERSIONS.indexOf(o.maxVersion) < TLS_VERSIONS.indexOf(o.minVersion)) {
    errors.push(`tlsMaxVersion: ${o.maxVersion} is below tlsMinVersion ${o.minVersion}; no handshake could succeed`);
  }
  if (!errors.length && o.ciphers !== undefined) {
    try {
      require('tls').createSecureContext(o);
    } catch (err) {
      errors.push(`cipherSuite: OpenSSL accepts none of ${JSON.stringify(o.ciphers)} (${err.message}); ` +
        'expected an OpenSSL cipher list such as "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"');
    }
  }
  if (config.http2Settings && typeof config.http2Settings === 'object') {
    try {
      require('http2').getPackedSettings(config.http2Settings);
    } catch (err) {
      errors.push(`http2Settings: ${err.message}`);
    }
  }
  for (const [key, option] of [['ecdhCurve', 'ecdhCurve'], ['signatureAlgorithms', 'sigalgs']]) {
    if (errors.length || o[option] === undefined) continue;
    try {
      require('tls').createSecureContext({ [option]: o[option] });
    } catch (err) {
      errors.push(`${key}: OpenSSL refuses ${JSON.stringify(o[option])} (${err.message})`);
    }
  }
  return errors;
}

function isConfigured(v) {
  return typeof v === 'string' && v !== '';
}

function exists(file) {
  try {
    fs.statSync(file);
    return true;
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return false;
    return true; // present but unreadable: let the read report it
  }
}

function ensureCertificate(config, opts = {}) {
  const log = opts.log || defaultLog;
  const fileLabel = opts.configFile || 'config';
  const now = opts.now !== undefined ? new Date(opts.now).getTime() : Date.now();
  const result = { certFile: null, keyFile: null, generated: false, fingerprint256: null, errors: [] };
  const fail = (msg) => { result.errors.push(`${fileLabel}: ${msg}`); };

  if (!config || !config.secure) return result;

  for (const e of checkTlsOptions(config)) fail(e);
  if (!config.disableNonEncryptedServer && config.port === config.sport && config.port !== 0 && config.port !== undefined) {
    fail(`sport: ${config.sport} is also "port"; HTTP and HTTPS need two ports (or set "disableNonEncryptedServer": true)`);
  }

  // SNI entries: each must name a host (or *.domain) and a readable, matching pair.
  const sni = config.sni || {};
  for (const host of Object.keys(sni)) {
    const where = 'sni' + quoteKey(host);
    const entry = sni[host];
    if (!validSniName(host)) {
      fail(`${where}: expected a host name or "*.domain" (one "*", as the whole first label), found ${JSON.stringify(host)}`);
      continue;
    }
    if (!entry || !isConfigured(entry.cert) || !isConfigured(entry.key)) {
      fail(`${where}: expected {"cert": "PEM file", "key": "PEM file"}`);
      continue;
    }
    for (const e of checkPair(entry.cert, entry.key, { cert: where + '.cert', key: where + '.key' }).errors) fail(e);
  }

  const hasCert = isConfigured(config.cert);
  const hasKey = isConfigured(config.key);
  if (hasCert || hasKey) {
    // The user's own files: check them, never write them.
    if (!hasCert) fail(`cert: missing; "key" is set to ${config.key} but "cert" is not (set both, or neither to use a generated self-signed certificate)`);
    if (!hasKey) fail(`key: missing; "cert" is set to ${config.cert} but "key" is not (set both, or neither to use a generated self-signed certificate)`);
    if (!hasCert || !hasKey) return result;
    const certThere = exists(config.cert);
    const keyThere = exists(config.key);
    if (certThere !== keyThere) {
      if (!certThere) fail(`cert: file not found: ${config.cert} (the key file ${config.key} exists; both are needed)`);
      else fail(`key: file not found: ${config.key} (the certificate file ${config.cert} exists; both are needed)`);
      return result;
    }
    const checked = checkPair(config.cert, config.key, { cert: 'cert', key: 'key' });
    if (!certThere && !keyThere) {
      // Both missing: report both; a typo here must not silently turn into a self-signed certificate.
      for (const e of checked.errors) fail(e + ' (remove "cert" and "key" to have svr generate a self-signed certificate)');
      return result;
    }
    for (const e of checked.errors) fail(e);
    if (result.errors.length) return result;
    result.certFile = config.cert;
    result.keyFile = config.key;
    result.fingerprint256 = checked.x509.fingerprint256;
    const expires = Date.parse(checked.x509.validTo);
    if (expires <= now) log.warn(`certificate ${config.cert} expired on ${checked.x509.validTo}; clients will refuse it`);
    else if (expires - now < RENEW_BEFORE_DAYS * DAY) log.warn(`certificate ${config.cert} expires on ${checked.x509.validTo}; renew it and reload svr (SIGHUP)`);
    return result;
  }

  if (result.errors.length) return result;

  // No certificate configured: use (or make) the self-signed one in the state directory.
  const { dir, certFile, keyFile } = selfSignedPaths(config, opts.env);
  result.certFile = certFile;
  result.keyFile = keyFile;
  const certThere = exists(certFile);
  const keyThere = exists(keyFile);
  let reason = null;
  if (!certThere && !keyThere) {
    reason = 'none found';
  } else if (certThere !== keyThere) {
    reason = `only ${certThere ? certFile : keyFile} was there`;
  } else {
    const checked = checkPair(certFile, keyFile, { cert: 'cert (generated)', key: 'key (generated)' });
    const unreadable = checked.errors.find((e) => /cannot read/.test(e));
    if (unreadable) {
      fail(`stateDirectory: ${unreadable} (fix the permissions or delete the file; svr makes a new one)`);
      return result;
    }
    if (checked.errors.length) {
      reason = checked.errors[0];
    } else {
      const expires = Date.parse(checked.x509.validTo);
      const have = parseSubjectAltName(checked.x509.subjectAltName);
      const missing = wantedNames(config).filter((w) => !have.some((h) => h.type === w.type && h.value === normaliseIp(w.value)));
      if (expires - now < RENEW_BEFORE_DAYS * DAY) {
        reason = `the old one ${expires <= now ? 'expired' : 'expires'} on ${checked.x509.validTo}`;
      } else if (missing.length) {
        reason = `the old one does not name ${missing.map((m) => m.value).join(', ')}`;
      } else {
        result.fingerprint256 = checked.x509.fingerprint256;
        if (!opts.checkOnly) log.info(`HTTPS uses the self-signed certificate ${certFile} (SHA-256 fingerprint ${result.fingerprint256}, valid until ${checked.x509.validTo})`);
        return result;
      }
    }
  }

  if (opts.checkOnly) return result; // --check: say nothing about a certificate it would make

  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { certPem, keyPem } = generateSelfSigned({ config, notBefore: now - 60 * 60 * 1000 });
    // key first: a certificate is never on disk without its key
    writeFileAtomic(keyFile, keyPem, 0o600);
    writeFileAtomic(certFile, certPem, 0o644);
    const x509 = new (crypto().X509Certificate)(certPem);
    result.generated = true;
    result.fingerprint256 = x509.fingerprint256;
    log.warn(`generated a self-signed certificate (${reason}): ${certFile}, key ${keyFile}; ` +
      `SHA-256 fingerprint ${x509.fingerprint256}; valid until ${x509.validTo} for ${x509.subjectAltName}. ` +
      (config.acme ? 'It serves HTTPS until ACME has obtained a certificate from the CA'
        : 'Browsers will warn about it: set "cert" and "key" to a certificate from a CA for production'));
  } catch (err) {
    fail(`stateDirectory: cannot write the self-signed certificate into ${dir}: ${describeFsError(err)} ` +
      '(set "stateDirectory" to a writable folder, or set "cert" and "key")');
  }
  return result;
}

// Is it time to renew the generated certificate (missing, unreadable, or expiring within
// RENEW_BEFORE_DAYS)? Configured certificates are never renewed by svr: for them this
// returns false and warns when they are close to expiry.
function renewalDue(config, { now = Date.now(), log = defaultLog, env } = {}) {
  if (!config || !config.secure) return false;
  if (isConfigured(config.cert) || isConfigured(config.key)) {
    try {
      const x509 = new (crypto().X509Certificate)(fs.readFileSync(config.cert));
      if (Date.parse(x509.validTo) - now < RENEW_BEFORE_DAYS * DAY) {
        log.warn(`certificate ${config.cert} expires on ${x509.validTo}; renew it and reload svr (SIGHUP)`);
      }
    } catch { /* the next reload reports it */ }
    return false;
  }
  try {
    const x509 = new (crypto().X509Certificate)(fs.readFileSync(selfSignedPaths(config, env).certFile));
    return Date.parse(x509.validTo) - now < RENEW_BEFORE_DAYS * DAY;
  } catch {
    return true;
  }
}

const RENEWAL_CHECK_MS = 12 * 60 * 60 * 1000;

// In the primary: every 12 hours (SVR_CERTIFICATE_CHECK_MS overrides it, for tests), call
// reload() when the generated certificate is due, so a server that is never restarted or
// reloaded does not end up serving an expired certificate.
function startRenewalTimer(getConfig, reload, { intervalMs = Number(process.env.SVR_CERTIFICATE_CHECK_MS) || RENEWAL_CHECK_MS, log = defaultLog } = {}) {
  const timer = setInterval(() => {
    const config = getConfig();
    if (renewalDue(config, { log })) {
      log.info('the self-signed certificate expires within 30 days (or is gone): reloading to make a new one');
      reload();
    }
  }, intervalMs);
  timer.unref();
  return timer;
}

module.exports = {
  renewalDue,
  startRenewalTimer,
  ensureCertificate,
  generateSelfSigned,
  stateDirectory,
  selfSignedPaths,
  wantedNames,
  validSniName,
  versionOptions,
  checkTlsOptions,
  VALIDITY_DAYS,
};
