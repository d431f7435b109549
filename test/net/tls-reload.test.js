'use strict';
// Renewed certificate files + SIGHUP: the new certificate is served, and no request fails
// while the workers roll, over HTTPS keep-alive, fresh TLS connections and HTTP/2.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http2 = require('node:http2');
const https = require('node:https');
const path = require('node:path');
const { makeTempDir, waitUntil } = require('../support/helpers');
const { startTlsServer, httpsRequest, h2Request, h2Connect, peerCertificate, writePair, fixturePair, replaceFile } = require('../support/tls-helpers');

// Lanes of requests until stop(): `keepalive` share an agent, `fresh` open a new TLS
// connection per request (so they see the certificate of the moment), `h2` share an HTTP/2
// session, replaced when the server sends GOAWAY (as browsers do). A stream the server
// refused (REFUSED_STREAM, or sent after its GOAWAY) was not processed and is retried, as
// RFC 9113 §8.7 allows; it is counted, not hidden.
function load(server, { keepalive = 6, fresh = 3, h2 = 3 } = {}) {
  const stats = { ok: 0, failed: [], fingerprints: [], h2retried: 0, h2retryReasons: {}, h2sessions: 0 };
  let running = true;
  const agent = new https.Agent({ keepAlive: true, maxSockets: keepalive, rejectUnauthorized: false });
  let session = null;
  const getSession = () => {
    if (!session || session.closed || session.destroyed || session.svrGoaway) {
      const s = h2Connect(server.httpsUrl);
      s.on('goaway', () => { s.svrGoaway = true; });
      s.on('close', () => { s.svrGoaway = true; });
      session = s;
      stats.h2sessions++;
    }
    return session;
  };
  const check = (res, what) => {
    if (res.status === 200 && res.text === 'renew me\n') stats.ok++;
    else stats.failed.push(`${what}: status ${res.status}`);
  };
  async function keepaliveLane() {
    while (running) {
      try {
        check(await httpsRequest(`${server.httpsUrl}/`, { agent }), 'keep-alive');
      } catch (error) {
        stats.failed.push(`keep-alive: ${error.code || error.message}`);
      }
    }
  }
  async function freshLane() {
    while (running) {
      try {
        const res = await httpsRequest(`${server.httpsUrl}/`, { headers: { Connection: 'close' } });
        check(res, 'fresh');
        stats.fingerprints.push(res.cert.fingerprint256);
      } catch (error) {
        stats.failed.push(`fresh: ${error.code || error.message}`);
      }
    }
  }
  async function h2Lane() {
    while (running) {
      try {
        check(await h2Request(server.httpsUrl, '/', { session: getSession() }), 'h2');
      } catch (error) {
        const refused = error.code === 'ERR_HTTP2_GOAWAY_SESSION' || error.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM ||
          (error.code === 'ERR_HTTP2_STREAM_ERROR' && /REFUSED_STREAM/.test(error.message)) || error.code === 'ERR_HTTP2_INVALID_SESSION';
        if (refused) {
          stats.h2retried++;
          stats.h2retryReasons[error.code || `rst ${error.rstCode}`] = (stats.h2retryReasons[error.code || `rst ${error.rstCode}`] || 0) + 1;
        }
        else stats.failed.push(`h2: ${error.code || error.message}`);
      }
    }
  }
  const lanes = [
    ...Array.from({ length: keepalive }, keepaliveLane),
    ...Array.from({ length: fresh }, freshLane),
    ...Array.from({ length: h2 }, h2Lane),
  ];
  return {
    stats,
    stop: async () => {
      running = false;
      await Promise.all(lanes);
      agent.destroy();
      if (session) session.close();
      return stats;
    },
  };
}


test('renewed certificate files + SIGHUP under load: the new certificate is served and no request fails', async (t) => {
  const certs = makeTempDir('svr-certs-');
  const first = writePair(certs, 'first', ['localhost']);
  const second = writePair(certs, 'second', ['localhost']);
  const broken = writePair(certs, 'broken', ['localhost']);
  const live = { cert: path.join(certs, 'live.crt'), key: path.join(certs, 'live.key') };
  fs.copyFileSync(first.cert, live.cert);
  fs.copyFileSync(first.key, live.key);
  const server = await startTlsServer({
    config: { cert: live.cert, key: live.key, enableHTTP2: true, workers: 2, enableLogging: false },
    files: { 'index.html': 'renew me\n' },
  });
  const traffic = load(server);
  try {
    assert.ok(await waitUntil(() => traffic.stats.ok > 200, 15000), 'the load reached the count in time');
    assert.equal((await peerCertificate(server.sport, 'localhost')).fingerprint256, first.fingerprint256);

    // a renewal: key, then certificate, each replaced atomically
    replaceFile(live.key, second.keyPem);
    replaceFile(live.cert, second.certPem);
    let since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    assert.equal((await peerCertificate(server.sport, 'localhost')).fingerprint256, second.fingerprint256);
    let before = traffic.stats.ok;
    // while the workers roll, old and new ones both accept; once it is done, only new ones
    assert.ok(await waitUntil(() => traffic.stats.ok > before + 200 && traffic.stats.fingerprints.includes(second.fingerprint256), 15000), 'fresh connections got the new certificate in time');
    const seen = traffic.stats.fingerprints.length;
    assert.ok(await waitUntil(() => traffic.stats.fingerprints.length > seen + 30, 15000), 'the load reached the count in time');
    assert.deepEqual([...new Set(traffic.stats.fingerprints.slice(seen))], [second.fingerprint256], 'after the reload, new connections get the new certificate');

    // a broken renewal (key of another certificate) is refused; the workers keep serving
    replaceFile(live.key, broken.keyPem);
    since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload failed, still serving with the previous config/, 'stderr', since);
    const reason = await server.waitForLog(/key: .* does not match the certificate/, 'stderr', since);
    assert.ok(reason.includes(live.key), reason);
    before = traffic.stats.ok;
    assert.ok(await waitUntil(() => traffic.stats.ok > before + 100, 15000), 'the load reached the count in time');
    assert.equal((await peerCertificate(server.sport, 'localhost')).fingerprint256, second.fingerprint256);
  } finally {
    const stats = await traffic.stop();
    await server.stop();
    fs.rmSync(certs, { recursive: true, force: true });
    assert.deepEqual(stats.failed, [], 'no request failed');
    assert.equal(stats.fingerprints[0], first.fingerprint256, 'fresh connections saw the old certificate first');
    assert.equal(stats.fingerprints[stats.fingerprints.length - 1], second.fingerprint256, 'and the new one last');
    assert.deepEqual([...new Set(stats.fingerprints)].sort(), [first.fingerprint256, second.fingerprint256].sort());
    assert.ok(stats.h2sessions >= 2, `HTTP/2 clients moved to a new session after the GOAWAY (${stats.h2sessions} sessions)`);
    t.diagnostic(`requests ok: ${stats.ok}, HTTP/2 streams retried after GOAWAY: ${stats.h2retried} ${JSON.stringify(stats.h2retryReasons)}, HTTP/2 sessions: ${stats.h2sessions}`);
  }
});

test('a generated certificate close to expiry is renewed by SIGHUP', async () => {
  const server = await startTlsServer({ config: { workers: 1 } });
  try {
    const before = await peerCertificate(server.sport, 'localhost');
    // make the generated certificate look like it expires in 3 days
    const soon = fixturePair({ config: {}, days: 3 });
    replaceFile(path.join(server.stateDir, 'selfsigned-key.pem'), soon.keyPem);
    replaceFile(path.join(server.stateDir, 'selfsigned-cert.pem'), soon.certPem);
    const since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/generated a self-signed certificate \(the old one expires on/, 'stderr', since);
    await server.waitForLog(/reload complete/, 'stderr', since);
    const after = await peerCertificate(server.sport, 'localhost');
    assert.notEqual(after.fingerprint256, before.fingerprint256);
    assert.ok(Date.parse(after.validTo) - Date.now() > 800 * 24 * 3600 * 1000);
    assert.equal(fs.statSync(path.join(server.stateDir, 'selfsigned-key.pem')).mode & 0o777, 0o600);
  } finally {
    await server.stop();
  }
});

test('--single-threaded: SIGHUP serves renewed certificate files (SNI ones too) to new connections', async () => {
  const certs = makeTempDir('svr-certs-');
  const first = writePair(certs, 'first', ['localhost']);
  const second = writePair(certs, 'second', ['localhost']);
  const sniFirst = writePair(certs, 'sni-first', ['a.test']);
  const sniSecond = writePair(certs, 'sni-second', ['a.test']);
  const live = { cert: path.join(certs, 'live.crt'), key: path.join(certs, 'live.key') };
  const sni = { cert: path.join(certs, 'a.crt'), key: path.join(certs, 'a.key') };
  for (const [from, to] of [[first, live], [sniFirst, sni]]) {
    fs.copyFileSync(from.cert, to.cert);
    fs.copyFileSync(from.key, to.key);
  }
  const server = await startTlsServer({ config: { cert: live.cert, key: live.key, sni: { 'a.test': sni } }, args: ['--single-threaded'] });
  try {
    assert.equal((await peerCertificate(server.sport, 'localhost')).fingerprint256, first.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'a.test')).fingerprint256, sniFirst.fingerprint256);
    for (const [from, to] of [[second, live], [sniSecond, sni]]) {
      replaceFile(to.key, from.keyPem);
      replaceFile(to.cert, from.certPem);
    }
    const since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    assert.equal((await peerCertificate(server.sport, 'localhost')).fingerprint256, second.fingerprint256);
    assert.equal((await peerCertificate(server.sport, 'a.test')).fingerprint256, sniSecond.fingerprint256);
    assert.equal((await httpsRequest(`${server.httpsUrl}/`)).status, 200);
  } finally {
    await server.stop();
    fs.rmSync(certs, { recursive: true, force: true });
  }
});

test('a running server renews its generated certificate before it expires, without a SIGHUP', async () => {
  const state = makeTempDir('svr-state-');
  const soon = fixturePair({ config: {}, days: 60 }); // fine at start: 60 days left
  fs.writeFileSync(path.join(state, 'selfsigned-key.pem'), soon.keyPem, { mode: 0o600 });
  fs.writeFileSync(path.join(state, 'selfsigned-cert.pem'), soon.certPem);
  const server = await startTlsServer({ stateDir: state, config: { workers: 1 }, env: { SVR_CERTIFICATE_CHECK_MS: '100' } });
  try {
    const before = await peerCertificate(server.sport, 'localhost');
    assert.equal(Date.parse(before.validTo), Date.parse(new (require('node:crypto').X509Certificate)(soon.certPem).validTo));
    // 60 days left is not due; 10 days left is
    const since = server.stderr().length;
    const due = fixturePair({ config: {}, days: 10 });
    replaceFile(path.join(state, 'selfsigned-key.pem'), due.keyPem);
    replaceFile(path.join(state, 'selfsigned-cert.pem'), due.certPem);
    await server.waitForLog(/expires within 30 days .*reloading to make a new one/, 'stderr', since);
    await server.waitForLog(/reload complete/, 'stderr', since);
    const after = await peerCertificate(server.sport, 'localhost');
    assert.ok(Date.parse(after.validTo) - Date.now() > 800 * 24 * 3600 * 1000, `renewed: ${after.validTo}`);
    assert.equal(server.stderr().slice(since).filter((line) => /reloading to make a new one/.test(line)).length, 1, 'renewed once, not on every check');
  } finally {
    await server.stop();
    fs.rmSync(state, { recursive: true, force: true });
  }
});
