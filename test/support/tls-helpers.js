'use strict';
// TLS test helpers: start svr with HTTPS on a free sport, and talk to it with real clients:
// Node's https (HTTP/1.1), Node's http2, and curl.

const { execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http2 = require('node:http2');
const https = require('node:https');
const path = require('node:path');
const tls = require('node:tls');
const { startServer, getFreePort } = require('./helpers');
const { startPipeline } = require('./pipeline');
const { generateSelfSigned, wantedNames } = require('../../lib/net/certificate');
const { testKeyPem } = require('./test-keys');

// startServer with secure: true on a free sport; state (the generated certificate) goes to
// `stateDir` (give one that outlives the server to test restarts; default: state/ in the
// server's temporary directory, removed by stop()).
async function startTlsServer({ config = {}, files = { 'index.html': 'hello over tls\n' }, stateDir, args, env } = {}) {
  const sport = config.sport ?? await getFreePort();
  const full = { secure: true, sport, stateDirectory: stateDir ?? 'state', ...config };
  // Without a stateDir of its own, the test is not about generating the certificate: the state
  // directory starts with one svr accepts as its own (an RSA key costs ~170 ms of CPU per start).
  const seeded = stateDir || config.stateDirectory || config.cert || config.key ? {} : seededState(full);
  const server = await startServer({ config: full, files: { ...seeded, ...files }, args, env });
  server.sport = sport;
  server.stateDir = stateDir ?? path.join(server.dir, 'state');
  server.httpsUrl = `https://localhost:${sport}`;
  return server;
}

// startTlsServer's in-process twin, for what an HTTPS or HTTP/2 request gets back: the pipeline
// behind the listeners a worker builds (pipeline.js, asWorker), the state directory seeded the same
// way. Answers with the same url, port, sport, httpsUrl, stateDir, stdout(), stderr(), stop().
async function startTlsPipeline({ config = {}, files = { 'index.html': 'hello over tls\n' }, env } = {}) {
  const full = { secure: true, stateDirectory: 'state', ...config };
  const seeded = config.stateDirectory || config.cert || config.key ? {} : seededState(full);
  const site = await startPipeline({ config: full, files: { ...seeded, ...files }, env, asWorker: true });
  site.stateDir = path.join(site.dir, 'state');
  return site;
}

// The certificates the tests make for svr to use, signed with a 2048-bit key made once per run
// (test-keys.js); `key` chooses which one (a label: another label, another key).
function fixturePair({ key, ...opts }) {
  return generateSelfSigned({ keyPem: testKeyPem(key), ...opts });
}

// A self-signed pair for the names svr wants for this config, made once per test process, as
// files for startServer (beside the web root, in state/).
const seededPairs = new Map();
function seededState(config) {
  const names = wantedNames(config);
  const key = JSON.stringify(names);
  if (!seededPairs.has(key)) seededPairs.set(key, fixturePair({ names }));
  const { certPem, keyPem } = seededPairs.get(key);
  return { '../state/selfsigned-cert.pem': certPem, '../state/selfsigned-key.pem': keyPem };
}

// One HTTPS/1.1 request. ca: PEM to trust (else verification is off). Resolves with
// { status, headers, body, text, cert (X509Certificate of the server), protocol, alpn }.
function httpsRequest(url, { method = 'GET', headers = {}, body, agent = false, ca, servername, timeout = 10000, tlsOptions = {} } = {}) {
  return new Promise((resolve, reject) => {
    const options = { method, headers, agent, timeout, ...tlsOptions };
    if (ca) options.ca = ca;
    else options.rejectUnauthorized = false;
    if (servername) options.servername = servername;
    const req = https.request(url, options, (res) => {
      const chunks = [];
      const socket = res.socket;
      const peer = socket.getPeerX509Certificate ? socket.getPeerX509Certificate() : null;
      const protocol = socket.getProtocol ? socket.getProtocol() : null;
      const alpn = socket.alpnProtocol;
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const buffer = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, body: buffer, text: buffer.toString('utf8'), cert: peer, protocol, alpn, httpVersion: res.httpVersion });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

function h2Connect(origin, { ca, servername } = {}) {
  const options = ca ? { ca } : { rejectUnauthorized: false };
  if (servername) options.servername = servername;
  const session = http2.connect(origin, options);
  session.on('error', () => {}); // surfaced through the requests
  return session;
}

// One HTTP/2 request on `session` (or a fresh one, closed afterwards).
// Resolves with { status, headers, body, text, alpn }.
function h2Request(origin, urlPath, { session, method = 'GET', headers = {}, body, ca, timeout = 10000 } = {}) {
  const own = !session;
  const s = session || h2Connect(origin, { ca });
  return new Promise((resolve, reject) => {
    let stream;
    try {
      stream = s.request({ ':method': method, ':path': urlPath, ...headers }, { endStream: body === undefined });
      if (body !== undefined) stream.end(body);
    } catch (error) {
      reject(error);
      return;
    }
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), timeout);
    let responseHeaders = null;
    const chunks = [];
    stream.on('response', (h) => { responseHeaders = h; });
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('error', (error) => { clearTimeout(timer); if (own) s.close(); reject(error); });
    stream.on('close', () => {
      clearTimeout(timer);
      const alpn = s.alpnProtocol;
      if (own) s.close();
      if (!responseHeaders) {
        const error = new Error(`HTTP/2 stream closed without a response (rst code ${stream.rstCode})`);
        error.rstCode = stream.rstCode;
        reject(error);
        return;
      }
      const body = Buffer.concat(chunks);
      resolve({ status: responseHeaders[':status'], headers: responseHeaders, body, text: body.toString('utf8'), alpn });
    });
  });
}

// Runs curl; resolves with { code, stdout, stderr }.
function curl(args) {
  return new Promise((resolve) => {
    execFile('curl', ['--silent', '--show-error', '--max-time', '10', ...args], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr: stderr.toString() });
    });
  });
}

// The certificate a TLS server presents for `servername` (SNI), as an X509Certificate.
function peerCertificate(port, servername, extra = {}) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false, ...extra }, () => {
      const cert = socket.getPeerX509Certificate();
      const protocol = socket.getProtocol();
      socket.end();
      resolve(Object.assign(cert, { negotiated: protocol }));
    });
    socket.on('error', reject);
  });
}

// A certificate/key pair on disk for tests: names = ['a.test', '*.w.test', ...]; pairs of
// different `name`s have different keys.
function writePair(dir, name, names, opts = {}) {
  const { certPem, keyPem } = fixturePair({ names: names.map((value) => ({ type: 'dns', value })), key: name, ...opts });
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  fs.writeFileSync(cert, certPem);
  fs.writeFileSync(key, keyPem, { mode: 0o600 });
  return { cert, key, certPem, keyPem, fingerprint256: new crypto.X509Certificate(certPem).fingerprint256 };
}

// Replace a file the way certbot and cp-then-mv do: a reader sees the old or the new file, whole.
function replaceFile(file, content) {
  const tmp = `${file}.new`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, file);
}

module.exports = { startTlsServer, startTlsPipeline, seededState, httpsRequest, h2Connect, h2Request, curl, peerCertificate, writePair, fixturePair, replaceFile };
