'use strict';
// What ACME keeps in the state directory, under acme/ (every file written whole, through a
// temporary file and a rename, so a reader on this or another host never sees half of one):
//
//   accounts/<ca>.json                  the account key and URL for one CA (mode 0600)
//   certificates/<name>/cert.pem        the chain the CA issued (0644)
//   certificates/<name>/key.pem         its private key (0600)
//   certificates/<name>/meta.json       names, CA, expiry, next renewal, failures (0644)
//   challenges/http-01/<token>.json     a pending HTTP-01 answer, for every host sharing the directory
//   challenges/tls-alpn-01/<name>.json  a pending TLS-ALPN-01 answer
//   locks/<name>.lock                   who is ordering <name> now (lock.js)
//
// <name> is the certificate's first domain; <ca> is the directory URL's host and a hash of it.

// Loaded at first use: a worker with no ACME never needs node:crypto (test/pipeline/lazy-loading.test.js).
let cryptoModule = null;
const crypto = () => (cryptoModule ??= require('node:crypto'));
const fs = require('node:fs');
const path = require('node:path');
const { stateDirectory } = require('../product');

function acmeDirectory(config) {
  return path.join(stateDirectory(config), 'acme');
}

function writeFileAtomic(file, data, mode) {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}-${crypto().randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(tmp, data, { mode, flag: 'wx' });
    fs.chmodSync(tmp, mode);
    fs.renameSync(tmp, file);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    throw error;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
}

function caId(directoryUrl) {
  const url = new URL(directoryUrl);
  const hash = crypto().createHash('sha256').update(directoryUrl).digest('hex').slice(0, 12);
  return `${url.hostname}-${hash}`;
}

class AcmeStore {
  constructor(root) {
    this.root = root;
  }

  accountFile(directoryUrl) {
    return path.join(this.root, 'accounts', `${caId(directoryUrl)}.json`);
  }

  readAccount(directoryUrl) {
    const saved = readJson(this.accountFile(directoryUrl));
    if (!saved) return null;
    return { url: saved.url, key: crypto().createPrivateKey(saved.key), email: saved.email };
  }

  writeAccount(directoryUrl, { url, key, email }) {
    const pem = key.export({ type: 'pkcs8', format: 'pem' });
    writeFileAtomic(this.accountFile(directoryUrl), JSON.stringify({ directory: directoryUrl, url, email, key: pem }, null, 2) + '\n', 0o600);
  }

  removeAccount(directoryUrl) {
    fs.rmSync(this.accountFile(directoryUrl), { force: true });
  }

  certificateDir(name) {
    return path.join(this.root, 'certificates', name);
  }

  certificateFiles(name) {
    const dir = this.certificateDir(name);
    return { certFile: path.join(dir, 'cert.pem'), keyFile: path.join(dir, 'key.pem'), metaFile: path.join(dir, 'meta.json') };
  }

  // { certPem, keyPem, x509, meta } or null when there is none (or it is damaged).
  readCertificate(name) {
    const { certFile, keyFile, metaFile } = this.certificateFiles(name);
    try {
      const certPem = fs.readFileSync(certFile, 'utf8');
      const keyPem = fs.readFileSync(keyFile, 'utf8');
      const x509 = new (crypto().X509Certificate)(certPem);
      if (!x509.checkPrivateKey(crypto().createPrivateKey(keyPem))) return null;
      return { certPem, keyPem, x509, meta: readJson(metaFile) || {} };
    } catch {
      return null;
    }
  }

  // Key first: a certificate is never on disk without its key.
  writeCertificate(name, { certPem, keyPem, meta }) {
    const { certFile, keyFile, metaFile } = this.certificateFiles(name);
    writeFileAtomic(keyFile, keyPem, 0o600);
    writeFileAtomic(certFile, certPem, 0o644);
    this.writeMeta(name, meta);
  }

  writeMeta(name, meta) {
    writeFileAtomic(this.certificateFiles(name).metaFile, JSON.stringify(meta, null, 2) + '\n', 0o644);
  }

  readMeta(name) {
    try {
      return readJson(this.certificateFiles(name).metaFile);
    } catch {
      return null;
    }
  }

  certificateNames() {
    try {
      return fs.readdirSync(path.join(this.root, 'certificates')).sort();
    } catch {
      return [];
    }
  }

  challengeFile(type, id) {
    return path.join(this.root, 'challenges', type, `${id}.json`);
  }

  writeChallenge(record) {
    const id = record.type === 'http-01' ? record.token : record.identifier;
    writeFileAtomic(this.challengeFile(record.type, id), JSON.stringify(record) + '\n', 0o644);
  }

  removeChallenge(record) {
    const id = record.type === 'http-01' ? record.token : record.identifier;
    fs.rmSync(this.challengeFile(record.type, id), { force: true });
  }

  lockFile(name) {
    return path.join(this.root, 'locks', `${name}.lock`);
  }
}

module.exports = { AcmeStore, acmeDirectory, caId, writeFileAtomic, readJson };
