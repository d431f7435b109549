'use strict';
// Every accepted connection has TCP_NODELAY (nginx's tcp_nodelay on): svr writes a response in
// as few writes as it can, and a last small write must not wait for the client's delayed ACK of
// the one before (up to 40 ms on Linux), which is what Nagle's algorithm does to a stream of
// small writes (an event stream's events, a script's chunks). Node sets it on plain HTTP and
// https listeners and on HTTP/2 sessions, but not on an HTTP/1.1 connection that
// http2.createSecureServer takes (allowHTTP1), which is how svr serves HTTP/1.1 over TLS when
// enableHTTP2 is on. Checked where it happens: the worker's system calls, seen by strace.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { request, readyWorkerPids, ensureDebianPackage, makeTempDir, waitUntil } = require('../support/helpers');
const { startTlsServer, httpsRequest, h2Request } = require('../support/tls-helpers');

// strace attached to pid, writing its accept, setsockopt and close calls to a file, ready once it
// says so.
async function traceSockets(stracePath, pid, t) {
  const out = path.join(makeTempDir(), 'strace.txt');
  const child = spawn(stracePath, ['-f', '-p', String(pid), '-e', 'trace=accept,accept4,setsockopt,close', '-o', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  assert.ok(await waitUntil(() => /attached/.test(stderr) || child.exitCode !== null, 10000), 'strace attached');
  if (!/attached/.test(stderr)) return { skip: `strace cannot attach: ${stderr.trim().split('\n').pop()}` };
  return {
    async calls() {
      child.kill('SIGINT');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
      return fs.readFileSync(out, 'utf8');
    },
  };
}

// strace's lines -> [{ fd, noDelay }], one per accepted connection, in order.
function acceptedConnections(text) {
  const open = new Map();
  const all = [];
  for (const line of text.split('\n')) {
    const accepted = /\baccept4?\(.*\) = (\d+)$/.exec(line);
    const noDelay = /\bsetsockopt\((\d+), SOL_TCP, TCP_NODELAY, \[1\]/.exec(line);
    const closed = /\bclose\((\d+)\)/.exec(line);
    if (accepted) {
      const connection = { fd: Number(accepted[1]), noDelay: false };
      open.set(connection.fd, connection);
      all.push(connection);
    } else if (noDelay && open.has(Number(noDelay[1]))) {
      open.get(Number(noDelay[1])).noDelay = true;
    } else if (closed) {
      open.delete(Number(closed[1]));
    }
  }
  return all;
}

test('every accepted connection gets TCP_NODELAY: plain HTTP, HTTP/1.1 over TLS and HTTP/2 (enableHTTP2)', async (t) => {
  const strace = ensureDebianPackage('strace');
  if (strace.skip) return t.skip(strace.skip);
  const server = await startTlsServer({ config: { workers: 1, enableHTTP2: true } });
  t.after(() => server.stop());
  const [worker] = readyWorkerPids(server);
  const trace = await traceSockets(strace.path, worker, t);
  if (trace.skip) return t.skip(trace.skip);
  assert.equal((await request(`${server.url}/`, { agent: false })).status, 301); // the plain port of an HTTPS site
  assert.equal((await httpsRequest(`${server.httpsUrl}/`, { tlsOptions: { rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] } })).status, 200);
  assert.equal((await h2Request(server.httpsUrl, '/')).status, 200);
  const connections = acceptedConnections(await trace.calls());
  assert.deepEqual(connections.map((c) => c.noDelay), [true, true, true], 'TCP_NODELAY on the plain, the HTTP/1.1 over TLS and the HTTP/2 connection');
  return undefined;
});
