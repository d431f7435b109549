'use strict';

// What the HTTPS / HTTP/2 listeners need, built in each worker from the config
// the primary validated (the primary ran ensureCertificate first, so the files
// are there and match).
//
// loadTlsContext(config) -> options for https.createServer / http2.createSecureServer:
//   { key, cert, minVersion, maxVersion?, ciphers?, SNICallback? }

const fs = require('fs');
// tls, https and http2 are required when a secure listener is made: a plain-HTTP worker never
// loads them (start-up time).
const { selfSignedPaths, versionOptions } = require('./certificate');
const { acmeSettings } = require('../acme/settings');
const { AcmeStore, acmeDirectory } = require('../acme/store');
const { answerAlpnChallenges } = require('./acme-alpn');
const { rememberAccepted } = require('./accepted-socket');
const { trackSessions, responseClass } = require('./http2-sessions');

// The certificate and key in use: the configured ones; else, with ACME, the certificate the CA
// issued once there is one; else the generated pair.
function certificatePair(config) {
  if (config.cert || config.key) return { cert: fs.readFileSync(config.cert), key: fs.readFileSync(config.key) };
  const acme = acmeSettings(config);
  if (acme && acme.certName) {
    // The primary writes the key, then the certificate: a read between the two sees a pair that
    // does not match (readCertificate checks), and the next read sees the new pair.
    const store = new AcmeStore(acmeDirectory(config));
    for (let attempt = 0; attempt < 3; attempt++) {
      const issued = store.readCertificate(acme.certName);
      if (issued) return { cert: issued.certPem, key: issued.keyPem };
    }
  }
  const { certFile, keyFile } = selfSignedPaths(config);
  return { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) };
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
  const base = versionOptions(config);
  const options = Object.assign(certificatePair(config), base);
  const sni = config.sni || {};
  const hosts = Object.keys(sni);
  if (hosts.length) {
    const match = sniMatcher(hosts.map((host) => [host, require('tls').createSecureContext(Object.assign({
      cert: fs.readFileSync(sni[host].cert),
      key: fs.readFileSync(sni[host].key),
    }, base))]));
    // null -> the server's default certificate (options.cert/key)
    options.SNICallback = (servername, cb) => cb(null, match(servername));
  }
  // SVR.JS's client certificates: ask for one, and with rejectUnauthorizedClientCertificates
  // refuse a client without a certificate the system's CAs trust.
  if (config.useClientCertificate) {
    options.requestCert = true;
    // Node reads a missing rejectUnauthorized as true: pass exactly the boolean.
    options.rejectUnauthorized = config.rejectUnauthorizedClientCertificates === true;
  }
  return options;
}

// Wrap the pipeline for the secure listener: HSTS, and HTTP/2 requests made to look
// like HTTP/1.1 ones where the pipeline reads them: Host from :authority (and a Connection
// header left out: http2-sessions.js's response class).
function secureHandler(config, handler) {
  const maxAge = Number(config.hstsMaxAge) || 0;
  const hsts = maxAge > 0 ? 'max-age=' + Math.floor(maxAge) : null;
  return function secureRequest(req, res) {
    if (req.httpVersionMajor === 2 && req.headers.host === undefined && req.headers[':authority'] !== undefined) req.headers.host = req.headers[':authority'];
    if (hsts) res.setHeader('Strict-Transport-Security', hsts);
    return handler(req, res);
  };
}

// The SETTINGS advertised: http2Settings over our defaults (the schema fills in
// maxConcurrentStreams; a config built without the schema still gets the bound).
// http2Settings (SVR.JS's key): Node's HTTP/2 settings over svr's defaults (128 concurrent streams,
// as nginx); maxHeaderSize still bounds the header list.
function http2Settings(config, serverOptions) {
  const settings = Object.assign({ maxConcurrentStreams: 128 }, config.http2Settings);
  if (serverOptions.maxHeaderSize) settings.maxHeaderListSize = serverOptions.maxHeaderSize;
  return settings;
}

// The HTTPS server for `sport`: HTTP/2 with HTTP/1.1 fallback (ALPN) when enableHTTP2, else
// HTTPS. Returns { server, drain, reload }:
//   drain() sends every HTTP/2 session a GOAWAY, so clients finish their streams and open new
//   connections elsewhere (HTTP/1.1 connections are drained by the worker with
//   "Connection: close", as on the plain listener);
//   reload(config) loads the certificate files (and SNI ones) again for new connections
//   (--single-threaded's SIGHUP and a new ACME certificate; in a cluster a reload's new workers
//   load them instead).
// acmeAnswers (acme/challenges.js): TLS-ALPN-01 answers, when ACME is on.
function createSecureServer(config, handler, serverOptions = {}, { acmeAnswers = null } = {}) {
  let context = loadTlsContext(config);
  const options = Object.assign({}, serverOptions, context, {
    // one callback for the server's life, so reload() can change the SNI certificates too
    SNICallback: (servername, cb) => (context.SNICallback ? context.SNICallback(servername, cb) : cb(null, null)),
  });
  const h = secureHandler(config, handler);
  const reload = (next) => {
    const fresh = loadTlsContext(next); // throws on unreadable files: the caller keeps the old context
    const contextOptions = Object.assign({}, fresh);
    delete contextOptions.SNICallback;
    server.setSecureContext(contextOptions);
    context = fresh;
  };
  let server;
  if (!config.enableHTTP2) {
    server = require('https').createServer(options, h);
    rememberAccepted(server);
    if (acmeAnswers) answerAlpnChallenges(server, acmeAnswers);
    return { server, drain: () => {}, reload };
  }
  const http2 = require('http2');
  options.allowHTTP1 = true;
  options.settings = http2Settings(config, serverOptions);
  options.Http2ServerResponse = responseClass(http2);
  // https.createServer sets TCP_NODELAY on what it accepts, and Node's HTTP/2 sessions set it on
  // theirs; an HTTP/1.1 connection this listener takes (allowHTTP1) got none. Without it a small
  // write waits for the client's delayed ACK of the one before (Nagle's algorithm): an event
  // stream's events, a script's chunks.
  options.noDelay = true;
  // WebSockets over HTTP/2 (RFC 8441 extended CONNECT), offered when there is a proxy to take them.
  if (Array.isArray(config.proxy) && config.proxy.length > 0) options.settings.enableConnectProtocol = true;
  server = http2.createSecureServer(options, h);
  rememberAccepted(server);
  if (acmeAnswers) answerAlpnChallenges(server, acmeAnswers);
  // http2MaxRequestsPerConnection: Node never forgets the queued bytes of a stream the client
  // resets (up to a DATA slice each, static/http2-body.js) and ends a session whose count passes
  // maxSessionMemory (10 MB) with INTERNAL_ERROR: a fresh session starts from zero.
  // sendTimeout: a stream whose client opens no window (or reads nothing) gives back its file and
  // buffers instead of holding them for as long as the connection lasts.
  const { drain } = trackSessions(server, {
    idleMs: Number(config.keepAliveTimeout) || 0,
    maxStreams: config.http2MaxRequestsPerConnection,
    sendTimeoutMs: Number(config.sendTimeout) || 0,
  });
  return { server, reload, drain };
}

module.exports = {
  loadTlsContext,
  sniMatcher,
  createSecureServer,
};
