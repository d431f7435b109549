'use strict';
// SVR.JS's TLS extras: useClientCertificate (+ rejectUnauthorizedClientCertificates), ecdhCurve.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startTlsServer, httpsRequest } = require('./tls-helpers');

test('useClientCertificate + rejectUnauthorizedClientCertificates: a client without a certificate is refused', async () => {
  const server = await startTlsServer({ config: { useClientCertificate: true, rejectUnauthorizedClientCertificates: true, disableNonEncryptedServer: true } });
  try {
    await assert.rejects(httpsRequest(`${server.httpsUrl}/`));
  } finally {
    await server.stop();
  }
});

test('useClientCertificate alone asks but serves; ecdhCurve restricts the key exchange', async () => {
  const server = await startTlsServer({ config: { useClientCertificate: true, ecdhCurve: 'P-256', disableNonEncryptedServer: true } });
  try {
    const res = await httpsRequest(`${server.httpsUrl}/`, { tlsOptions: { ecdhCurve: 'P-256' } });
    assert.equal(res.status, 200);
    await assert.rejects(httpsRequest(`${server.httpsUrl}/`, { tlsOptions: { ecdhCurve: 'X25519' } }));
  } finally {
    await server.stop();
  }
});
