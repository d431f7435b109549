'use strict';
// acceptedSocket: the accepted TCP socket under a request's socket, over plain HTTP, HTTPS and
// HTTP/2, found without reading Node's private fields on the request path.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const http2 = require('node:http2');
const { rememberAccepted, acceptedSocket } = require('../../lib/net/accepted-socket');
const { fixturePair, httpsRequest, h2Request } = require('../support/tls-helpers');
const { request } = require('../support/helpers');

// A server whose handler answers whether acceptedSocket(req.socket) is the socket 'connection' gave.
async function withServer(server, ask) {
  const accepted = new Set();
  server.on('connection', (socket) => accepted.add(socket));
  server.on('request', (req, res) => res.end(accepted.has(acceptedSocket(req.socket)) ? 'accepted' : 'other'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await ask(server.address().port);
  } finally {
    server.close();
    if (server.closeAllConnections) server.closeAllConnections();
  }
}

const pair = fixturePair({ config: {} });
const tlsOptions = { cert: pair.certPem, key: pair.keyPem };

test('plain HTTP: the request socket is the accepted one', async () => {
  const body = await withServer(http.createServer(), (port) => request(`http://127.0.0.1:${port}/`));
  assert.equal(body.text, 'accepted');
});

test('HTTPS: the TLS socket leads to the accepted TCP socket', async () => {
  const server = https.createServer(tlsOptions);
  rememberAccepted(server);
  const res = await withServer(server, (port) => httpsRequest(`https://127.0.0.1:${port}/`));
  assert.equal(res.text, 'accepted');
});

test('HTTP/2: the stream\'s socket proxy leads to the accepted TCP socket', async () => {
  const server = http2.createSecureServer({ ...tlsOptions, allowHTTP1: true });
  rememberAccepted(server);
  const res = await withServer(server, (port) => h2Request(`https://127.0.0.1:${port}`, '/'));
  assert.equal(res.text, 'accepted');
});
