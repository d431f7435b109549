'use strict';
// One FastCGI request on a pooled connection, with a client whose buffer is full when the
// response ends: the connection must go back to the pool ready for the next request.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { ConnectionPool } = require('../../lib/pipeline/gateway/fastcgi/pool');
const { fastcgiRequest } = require('../../lib/pipeline/gateway/fastcgi/request');
const { CgiResponse } = require('../../lib/pipeline/gateway/cgi-response');
const { startFakeFastcgi } = require('../support/fake-fastcgi');
const { makeTempDir } = require('../support/helpers');

const quiet = { info() {}, warn() {}, error() {} };

// A response whose every write says "buffer full" and which never drains: a client that stopped
// reading just as the script finished (Node emits no 'drain' once a response has ended).
function fullResponse() {
  const res = new EventEmitter();
  Object.assign(res, {
    status: null, ended: false, failed: null,
    writeHead(status) { this.status = status; },
    write() { return false; },
    end() { this.ended = true; this.emit('done'); },
    destroy() { this.emit('done'); },
  });
  return res;
}

function run(pool, url) {
  const req = Object.assign(new EventEmitter(), { method: 'GET', url, headers: {}, httpVersionMajor: 1, svr: {}, resume() {} });
  const res = fullResponse();
  const response = new CgiResponse(req, res, { fail: (status) => { res.failed = status; res.emit('done'); }, localRedirect: () => {} });
  fastcgiRequest(req, res, { pool, params: [['SCRIPT_NAME', url]], timeouts: { firstByte: 2000, idle: 2000 }, response, log: quiet, label: 'test' });
  return new Promise((resolve) => res.once('done', () => resolve(res)));
}

test('a connection released while paused for a slow client serves the next request', async (t) => {
  const dir = makeTempDir();
  // Header block, body and END_REQUEST arrive in one chunk: the END is read after the pause.
  const fcgi = await startFakeFastcgi(dir, (r) => { r.write('Content-Type: text/plain\r\n\r\nbody'); r.end(); });
  const pool = new ConnectionPool({ path: fcgi.socketPath }, { maxConnections: 1, connectMs: 1000, keepAliveMs: 5000 });
  t.after(async () => { pool.close(); await fcgi.stop(); });
  for (const url of ['/first', '/second', '/third']) {
    const res = await run(pool, url);
    assert.equal(res.failed, null, `${url}: no ${res.failed}`);
    assert.equal(res.status, 200, url);
    assert.ok(res.ended, url);
  }
  assert.equal(fcgi.accepted(), 1, 'one connection for all three');
});
