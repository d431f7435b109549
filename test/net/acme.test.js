'use strict';
// ACME against Pebble (Let's Encrypt's test CA, Debian's package), with real sockets: svr obtains
// certificates by HTTP-01 and by TLS-ALPN-01 and serves them to a client that trusts only Pebble's
// root; the challenge path cannot be shadowed; a CA that refuses leaves the site serving and is
// retried with backoff.

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const tls = require('node:tls');
const { startServer, getFreePort, request, runSvr } = require('../support/helpers');
const { pebbleAvailable, startPebble } = require('../support/pebble');

let skip = false;
before(() => {
  const available = pebbleAvailable();
  if (available.skip) skip = available.skip;
});

// The certificate a TLS client gets for servername, and whether it verifies against ca.
function served(port, servername, ca) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerCertificate(true);
      resolve({ authorized: socket.authorized, error: socket.authorizationError, cert, issuer: cert.issuerCertificate && cert.issuerCertificate.subject });
      socket.end();
    });
    socket.on('error', reject);
  });
}

// svr with ACME on against this Pebble: a fresh state directory.
async function startAcmeSite(t, { domain, challenges, pebbleEnv, validityPeriod, eabKeys, acme = {}, svrEnv = {}, config = {}, files = {}, args = [] }) {
  const port = await getFreePort();
  const sport = await getFreePort();
  const pebble = await startPebble({ httpPort: port, tlsPort: sport, env: pebbleEnv, validityPeriod, eabKeys });
  t.after(() => pebble.stop());
  const server = await startServer({
    config: {
      port, sport, domain, stateDirectory: 'state',
      acme: { directory: pebble.directory, email: 'admin@example.com', challenges, ...acme },
      ...config,
    },
    files,
    args,
    env: { NODE_EXTRA_CA_CERTS: pebble.caFile, ...svrEnv },
  });
  t.after(() => server.stop());
  return { server, pebble, port, sport };
}

for (const challenge of ['http-01', 'tls-alpn-01']) {
  test(`a fresh site obtains a certificate by ${challenge} and serves it`, async (t) => {
    if (skip) return t.skip(skip);
    const domain = `${challenge.replace(/-/g, '')}.svr.test`;
    // The TLS-ALPN-01 site asks for a P-384 key instead of the default P-256, and serves HTTP/2.
    const alpn = challenge === 'tls-alpn-01';
    const keyType = alpn ? 'ec-p384' : undefined;
    const { server, pebble, sport, port } = await startAcmeSite(t, { domain, challenges: [challenge], acme: { keyType }, config: { metrics: { path: '/metrics', onSitePort: true }, enableHTTP2: alpn } });
    const startedAt = Date.now();
    await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
    const obtained = server.stderr().find((line) => /ACME: obtained a certificate/.test(line));
    t.diagnostic(`${obtained} (test saw it after ${Date.now() - startedAt} ms)`);
    const root = await pebble.root();
    const result = await served(sport, domain, root);
    assert.equal(result.authorized, true, `the served chain verifies against Pebble's root: ${result.error}`);
    assert.match(result.cert.subjectaltname, new RegExp(`DNS:${domain.replace(/\./g, '\\.')}`));
    assert.equal(result.cert.nistCurve, keyType === 'ec-p384' ? 'P-384' : 'P-256');
    assert.equal(pebble.orders(), 1, 'one order');
    // The account (one per CA) and the key are private to svr's user.
    const acme = path.join(server.dir, 'state', 'acme');
    const [account] = fs.readdirSync(path.join(acme, 'accounts'));
    assert.equal(fs.statSync(path.join(acme, 'accounts', account)).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.join(acme, 'certificates', domain, 'key.pem')).mode & 0o777, 0o600);
    const used = server.stderr().filter((line) => /ACME: ordering/.test(line));
    assert.equal(used.length, 1);
    // svr certs and the metrics say what is served and until when.
    const certs = await runSvr(['certs', '--config', server.configFile]);
    assert.equal(certs.code, 0, certs.stderr);
    assert.match(certs.stdout, new RegExp(`^${domain.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(certs.stdout, /issuer: +.*Pebble Intermediate/);
    assert.match(certs.stdout, /expires: +\S+ \(in \d+\.\d days\)/);
    assert.match(certs.stdout, /next renewal: +\d{4}-\d\d-\d\dT.* \(two thirds of the lifetime\)/);
    const metrics = (await request(`http://127.0.0.1:${port}/metrics`)).text;
    const days = Number(new RegExp(`svr_acme_certificate_expiry_days\\{name="${domain}"\\} ([\\d.]+)`).exec(metrics)[1]);
    assert.ok(days > 1, metrics);
    assert.match(metrics, new RegExp(`svr_acme_renewal_failures_total\\{name="${domain}"\\} 0`));
    assert.match(metrics, new RegExp(`svr_acme_orders_total\\{name="${domain}"\\} 1`));
    // A reload's new workers serve the certificate from the state directory; nothing is ordered.
    const since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(new RegExp(`ACME: the certificate for ${domain.replace(/\./g, '\\.')} in the state directory expires .*; the workers serve it`), 'stderr', since);
    await server.waitForLog(/reload complete/, 'stderr', since);
    await server.waitForLog(/ACME: next check of/, 'stderr', since);
    const again = await served(sport, domain, root);
    assert.equal(again.authorized, true);
    assert.equal(again.cert.serialNumber, result.cert.serialNumber);
    assert.equal(pebble.orders(), 1);
    assert.match((await request(`http://127.0.0.1:${port}/metrics`)).text, new RegExp(`svr_acme_orders_total\\{name="${domain}"\\} 1`), 'the counter survives the reload');
  });
}

test('--single-threaded obtains and serves a certificate too', async (t) => {
  if (skip) return t.skip(skip);
  const domain = 'single.svr.test';
  const { server, pebble, sport } = await startAcmeSite(t, { domain, challenges: ['http-01'], args: ['--single-threaded'] });
  await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
  assert.equal((await served(sport, domain, await pebble.root())).authorized, true);
});

test('external account binding: a CA that requires it refuses an account without, accepts one with', async (t) => {
  if (skip) return t.skip(skip);
  const eabKeys = { 'kid-1': 'zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W' };
  const bound = await startAcmeSite(t, { domain: 'eab.svr.test', challenges: ['http-01'], eabKeys, acme: { eab: { kid: 'kid-1', hmacKey: eabKeys['kid-1'] } } });
  await bound.server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
  const unbound = await startAcmeSite(t, { domain: 'noeab.svr.test', challenges: ['http-01'], eabKeys });
  const line = await unbound.server.waitForLog(/ACME: could not obtain/, 'stderr', 0, 60000);
  assert.match(line, /this CA requires external account binding: set acme\.eab/);
});

test('a profile the CA does not offer fails the order with the profiles it does offer', async (t) => {
  if (skip) return t.skip(skip);
  const { server, pebble } = await startAcmeSite(t, { domain: 'profile.svr.test', challenges: ['http-01'], acme: { profile: 'shortlived' } });
  const line = await server.waitForLog(/ACME: could not obtain/, 'stderr', 0, 60000);
  assert.match(line, /the CA offers no profile "shortlived" \(it offers: none\)/);
  assert.equal(pebble.orders(), 0, 'no order sent');
});

test('TLS-ALPN-01 behind a balancer that sends the PROXY protocol', async (t) => {
  if (skip) return t.skip(skip);
  const net = require('node:net');
  const domain = 'proxied.svr.test';
  const port = await getFreePort();
  const sport = await getFreePort();
  const front = await getFreePort();
  // The "balancer": Pebble's validation connects here; it is forwarded to sport with a PROXY v1 header.
  const balancer = net.createServer((client) => {
    const upstream = net.connect(sport, '127.0.0.1', () => {
      upstream.write(`PROXY TCP4 ${client.remoteAddress.replace('::ffff:', '')} 127.0.0.1 ${client.remotePort} ${front}\r\n`);
      client.pipe(upstream).pipe(client);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise((resolve) => balancer.listen(front, '127.0.0.1', resolve));
  t.after(() => balancer.close());
  const pebble = await startPebble({ httpPort: port, tlsPort: front });
  t.after(() => pebble.stop());
  const server = await startServer({
    config: {
      port, sport, domain, stateDirectory: 'state', acceptProxyProtocol: { https: true }, trustedProxies: ['127.0.0.1'],
      acme: { directory: pebble.directory, challenges: ['tls-alpn-01'] },
    },
    env: { NODE_EXTRA_CA_CERTS: pebble.caFile },
  });
  t.after(() => server.stop());
  await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
  assert.equal((await served(front, domain, await pebble.root())).authorized, true);
});

test('a lock left by a crashed holder is taken over once it is older than the lock timeout', async (t) => {
  if (skip) return t.skip(skip);
  const domain = 'crashed.svr.test';
  const port = await getFreePort();
  const sport = await getFreePort();
  const pebble = await startPebble({ httpPort: port, tlsPort: sport });
  t.after(() => pebble.stop());
  // The state directory of a host that crashed while ordering: its lock, touched just now.
  const { makeTempDir } = require('../support/helpers');
  const state = makeTempDir('svr-acme-state-');
  fs.mkdirSync(path.join(state, 'acme', 'locks'), { recursive: true });
  const lockFile = path.join(state, 'acme', 'locks', `${domain}.lock`);
  fs.writeFileSync(lockFile, JSON.stringify({ pid: 999999, host: 'crashed-host', since: new Date().toISOString(), token: 'dead' }));
  const lockedAt = Date.now();
  const server = await startServer({
    config: { port, sport, domain, stateDirectory: state, acme: { directory: pebble.directory, challenges: ['http-01'] } },
    env: { NODE_EXTRA_CA_CERTS: pebble.caFile, SVR_ACME_LOCK_TIMEOUT_MS: '3000' },
  });
  t.after(() => server.stop());
  await server.waitForLog(/ACME: ordering a certificate/, 'stderr', 0, 30000);
  const waited = Date.now() - lockedAt;
  assert.ok(waited >= 3000, `ordered ${waited} ms after the crashed holder's last touch, not before the 3000 ms timeout`);
  await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 30000);
  // Released right after (the log line may reach us before the primary's next statement ran).
  const { waitUntil } = require('../support/helpers');
  assert.ok(await waitUntil(() => !fs.existsSync(lockFile), 5000), 'the lock is released after the order');
});

test('the challenge path cannot be shadowed by a rewrite rule, an access rule or a script; unknown and other-host tokens get 404', async (t) => {
  if (skip) return t.skip(skip);
  const domain = 'shadow.svr.test';
  const { server, pebble, port, sport } = await startAcmeSite(t, {
    domain,
    challenges: ['http-01'],
    config: {
      disableToHTTPSRedirect: true, // the plain port runs the whole pipeline, script included
      rewriteMap: [{ definingRegex: '/^\\/\\.well-known\\/(.*)$/', replacements: [{ regex: '/^.*$/', replacement: '/elsewhere' }] }],
      nonStandardCodes: [{ scode: 403, regex: '/acme-challenge/' }],
    },
    files: { 'serverSideScript.js': "res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end('script');\n" },
  });
  // The real order succeeds: Pebble fetched the token through all of them.
  await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
  assert.equal((await served(sport, domain, await pebble.root())).authorized, true);
  const base = `http://127.0.0.1:${port}`;
  assert.equal((await request(`${base}/anything`, { headers: { Host: domain } })).text, 'script', 'the script answers other paths');
  const unknown = await request(`${base}/.well-known/acme-challenge/unknownToken123`, { headers: { Host: domain } });
  assert.equal(unknown.status, 404);
  assert.notEqual(unknown.text, 'script');
  // A token another host sharing the state directory asked for, for another name.
  const challenges = path.join(server.dir, 'state', 'acme', 'challenges', 'http-01');
  fs.mkdirSync(challenges, { recursive: true });
  fs.writeFileSync(path.join(challenges, 'otherHostToken.json'), JSON.stringify({ type: 'http-01', token: 'otherHostToken', identifier: 'other.svr.test', keyAuthorization: 'otherHostToken.thumb' }));
  const forOther = await request(`${base}/.well-known/acme-challenge/otherHostToken`, { headers: { Host: 'other.svr.test' } });
  assert.equal(forOther.status, 200, 'any host answers a token in the shared state directory');
  assert.equal(forOther.text, 'otherHostToken.thumb');
  assert.equal((await request(`${base}/.well-known/acme-challenge/otherHostToken`, { headers: { Host: domain } })).status, 404, 'a token for another host');
  assert.equal((await request(`${base}/.well-known/acme-challenge/../acme-challenge/x`, { headers: { Host: domain } })).status, 404);
  assert.equal((await request(`${base}/.well-known/acme-challenge/otherHostToken`, { method: 'POST', headers: { Host: 'other.svr.test' } })).status, 405);
});

test('a CA that refuses: the site keeps serving, the problem is logged, retries back off', async (t) => {
  if (skip) return t.skip(skip);
  const domain = 'refused.svr.test';
  const port = await getFreePort();
  const sport = await getFreePort();
  const nobody = await getFreePort(); // Pebble validates on a port nothing listens on
  const pebble = await startPebble({ httpPort: nobody, tlsPort: nobody });
  t.after(() => pebble.stop());
  const server = await startServer({
    config: { port, sport, domain, stateDirectory: 'state', metrics: { path: '/metrics', onSitePort: true }, acme: { directory: pebble.directory, challenges: ['http-01'] } },
    env: { NODE_EXTRA_CA_CERTS: pebble.caFile, SVR_ACME_RETRY_MS: '1000' },
  });
  t.after(() => server.stop());
  const first = await server.waitForLog(/ACME: could not obtain a certificate for refused\.svr\.test \(attempt 1\)/, 'stderr', 0, 60000);
  t.diagnostic(first);
  assert.ok(server.stderr().some((line) => /ACME: no certificate for refused\.svr\.test yet: HTTPS serves the self-signed certificate until the CA issues one/.test(line)));
  assert.match(first, /the CA said connection: .*refused/i, 'the problem type and detail');
  assert.match(first, /still serving the self-signed certificate; next attempt in 1 s/);
  const third = await server.waitForLog(/\(attempt 3\)/, 'stderr', 0, 60000);
  assert.match(third, /next attempt in 4 s/);
  assert.equal(pebble.orders(), 3, 'one order per attempt, no more');
  // The site serves meanwhile, with the self-signed certificate.
  const hello = await served(sport, domain, undefined);
  assert.match(hello.cert.subject.O || '', /svr self-signed/);
  assert.equal((await request(`http://127.0.0.1:${port}/`)).status, 301);
  const metrics = (await request(`http://127.0.0.1:${port}/metrics`)).text;
  assert.match(metrics, /svr_acme_renewal_failures_total\{name="refused\.svr\.test"\} 3/);
  assert.doesNotMatch(metrics, /svr_acme_certificate_expiry_days\{/, 'no certificate, no expiry');
  const certs = await runSvr(['certs', '--config', server.configFile]);
  assert.match(certs.stdout, /refused\.svr\.test: no certificate yet/);
});

test('renewal swaps the certificate in every worker under load: no failed request, the old one never served after the swap', async (t) => {
  if (skip) return t.skip(skip);
  const domain = 'renew.svr.test';
  // Pebble's certificates live 15 s here: renewal is due at two thirds, about 10 s after issue.
  const { server, pebble, sport } = await startAcmeSite(t, {
    domain,
    challenges: ['tls-alpn-01'],
    validityPeriod: 15,
    config: { workers: 2 },
    files: { 'serverSideScript.js': "res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end(String(process.pid));\n" },
  });
  const firstLine = await server.waitForLog(/ACME: serving the certificate for .*\(serial (\w+)/, 'stderr', 0, 60000);
  const firstSerial = /serial (\w+)/.exec(firstLine)[1];
  const root = await pebble.root();
  const https = require('node:https');
  const results = [];
  let swappedAt = null;
  let stop = false;
  // Each request on a new connection (a new handshake), trusting only Pebble's root.
  const one = () => new Promise((resolve) => {
    const startedAt = Date.now();
    const req = https.get({ host: '127.0.0.1', port: sport, servername: domain, path: '/', ca: root, agent: false, headers: { Host: domain } }, (res) => {
      const serial = res.socket.getPeerCertificate().serialNumber;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => { results.push({ startedAt, ok: res.statusCode === 200, serial, pid: Number(body) }); resolve(); });
    });
    req.on('error', (error) => { results.push({ startedAt, ok: false, error: error.message }); resolve(); });
  });
  // Three lanes, each pausing 5 ms after an answer: enough handshakes to straddle the swap in
  // every worker without taking both cores of a shared machine.
  const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
  const lanes = Array.from({ length: 3 }, async () => { while (!stop) { await one(); await pause(); } });
  const since = server.stderr().length;
  const swapLine = await server.waitForLog(/ACME: serving the certificate for .*\(serial (\w+)/, 'stderr', since, 60000);
  swappedAt = Date.now();
  const secondSerial = /serial (\w+)/.exec(swapLine)[1];
  const pids = new Set(server.stderr().map((l) => /worker (\d+) ready/.exec(l)).filter(Boolean).map((m) => Number(m[1])));
  // Keep loading until every worker has answered with the new certificate at least once.
  const { waitUntil } = require('../support/helpers');
  const allSwapped = await waitUntil(() => [...pids].every((pid) => results.some((r) => r.startedAt > swappedAt && r.pid === pid && r.serial.toLowerCase() === secondSerial.toLowerCase())), 20000);
  stop = true;
  await Promise.all(lanes);
  assert.notEqual(secondSerial, firstSerial);
  assert.equal(pebble.orders(), 2, 'one order to obtain, one to renew: the primary orders, not each of the 2 workers');
  assert.ok(allSwapped, `every worker (${[...pids].join(', ')}) served the new certificate`);
  const failed = results.filter((r) => !r.ok);
  assert.deepEqual(failed, [], 'no failed request');
  const stale = results.filter((r) => r.startedAt > swappedAt && r.serial.toLowerCase() !== secondSerial.toLowerCase());
  assert.deepEqual(stale, [], 'no connection opened after the swap was logged got the old certificate');
  assert.ok(results.filter((r) => r.serial.toLowerCase() === firstSerial.toLowerCase()).length > 0, 'the load ran before the swap too');
  t.diagnostic(`${results.length} requests, ${results.filter((r) => r.startedAt > swappedAt).length} after the swap`);
});
