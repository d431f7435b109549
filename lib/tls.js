'use strict';

// What the HTTPS / HTTP/2 listeners need, built in each worker from the config
// the primary validated (the primary ran ensureCertificate first, so the files
// are there and match).
//
// loadTlsContext(config) -> options for https.createServer / http2.createSecureServer:
//   { key, cert, minVersion, maxVersion?, ciphers?, SNICallback? }

const fs = require('fs');
const tls = require('tls');
const { selfSignedPaths, versionOptions } = require('./certificate');

// The certificate and key files in use: the configured ones, else the generated pair.
function certificateFiles(config) {
  if (config.cert || config.key) return { certFile: config.cert, keyFile: config.key };
  const { certFile, keyFile } = selfSignedPaths(config);
  return { certFile, keyFile };
}

// Host patterns: exact names, and "*.domain" matching exactly one more label
// (a.domain, not domain and not a.b.domain), as browsers match wildcards.
function sniMatcher(entries) {
  const exact = new Map();
  const wildcard = new Map(); // "domain" -> context, for "*.domain"
  for (const [pattern, context] of entries) {
    const p = pattern.toLowerCase().replace(/\.$/, '');
    if (p.startsWith('*.')) wildcard.set(p.slice(2), context);
    else exact.set(p, context);
  }
  return function match(servername) {
    const name = String(servername || '').toLowerCase().replace(/\.$/, '');
    if (exact.has(name)) return exact.get(name);
    const dot = name.indexOf('.');
    if (dot > 0) {
      const rest = name.slice(dot + 1);
      if (wildcard.has(rest)) return wildcard.get(rest);
    }
    return null;
  };
}

function loadTlsContext(config) {
  const { certFile, keyFile } = certificateFiles(config);
  const base = versionOptions(config);
  const options = Object.assign({
    cert: fs.readFileSync(certFile),
    key: fs.readFileSync(keyFile),
  }, base);
  const sni = config.sni || {};
  const hosts = Object.keys(sni);
  if (hosts.length) {
    const match = sniMatcher(hosts.map((host) => [host, tls.createSecureContext(Object.assign({
      cert: fs.readFileSync(sni[host].cert),
      key: fs.readFileSync(sni[host].key),
    }, base))]));
    // null -> the server's default certificate (options.cert/key)
    options.SNICallback = (servername, cb) => cb(null, match(servername));
  }
  return options;
}

module.exports = { loadTlsContext, certificateFiles, sniMatcher, versionOptions };
