'use strict';
// What the proxy sends upstream for a WebSocket handshake (lib/pipeline/proxy/forward-headers.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const { upstreamRequestHeaders } = require('../../lib/pipeline/proxy/forward-headers');

test('an upgrade handshake goes upstream without the client\'s Content-Length', () => {
  // A re-attack run sent a WebSocket handshake with "Content-Length: 10": forwarded, the upstream
  // waited for a body that never came, holding its connection until svr's headers timeout (502).
  const req = {
    headers: { host: 'site.test', connection: 'Upgrade', upgrade: 'websocket', 'content-length': '10', 'sec-websocket-version': '13' },
    httpVersion: '1.1',
    socket: { remoteAddress: '127.0.0.1' },
  };
  const headers = upstreamRequestHeaders(req, { preserveHost: true }, { host: 'up.test' }, { isTrusted: () => false, upgrade: 'websocket' });
  assert.equal(headers['content-length'], undefined);
  assert.deepEqual([headers.connection, headers.upgrade, headers['sec-websocket-version']], ['Upgrade', 'websocket', '13']);
  const plain = upstreamRequestHeaders({ ...req, headers: { host: 'site.test', 'content-length': '10' } }, { preserveHost: true }, { host: 'up.test' }, { isTrusted: () => false });
  assert.equal(plain['content-length'], '10', 'a request that is no handshake keeps its length');
});
