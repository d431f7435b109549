'use strict';
// SVR.JS's TLS extras: useClientCertificate (+ rejectUnauthorizedClientCertificates), ecdhCurve,
// http2Settings. In-process: the pipeline behind the HTTPS/HTTP2 server lib/net builds with its TLS
// context (support/pipeline.js, asWorker).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startTlsPipeline, httpsRequest, h2Connect } = require('../support/tls-helpers');

test('useClientCertificate + rejectUnauthorizedClientCertificates: a client without a certificate is refused', async () => {
  const server = await startTlsPipeline({ config: { useClientCertificate: true, rejectUnauthorizedClientCertificates: true, disableNonEncryptedServer: true } });
  try {
    await assert.rejects(httpsRequest(`${server.httpsUrl}/`));
  } finally {
    await server.stop();
  }
});

test('useClientCertificate alone asks but serves; ecdhCurve restricts the key exchange', async () => {
  const server = await startTlsPipeline({ config: { useClientCertificate: true, ecdhCurve: 'P-256', disableNonEncryptedServer: true } });
  try {
    const res = await httpsRequest(`${server.httpsUrl}/`, { tlsOptions: { ecdhCurve: 'P-256' } });
    assert.equal(res.status, 200);
    await assert.rejects(httpsRequest(`${server.httpsUrl}/`, { tlsOptions: { ecdhCurve: 'X25519' } }));
  } finally {
    await server.stop();
  }
});

test('http2Settings reach HTTP/2 clients', async () => {
  const server = await startTlsPipeline({ config: { enableHTTP2: true, http2Settings: { maxConcurrentStreams: 7 }, disableNonEncryptedServer: true } });
  const session = h2Connect(server.httpsUrl);
  try {
    const settings = await new Promise((resolve) => session.once('remoteSettings', resolve));
    assert.equal(settings.maxConcurrentStreams, 7);
  } finally {
    session.close();
    await server.stop();
  }
});
