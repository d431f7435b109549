'use strict';
// Proxying an HTTP/2 request prints nothing of Node's: an HTTP/2 response has no reason phrase, and
// passing the upstream's made Node emit "UnsupportedWarning: Status message is not supported by
// HTTP/2" (once per process, so this file makes the only HTTP/2 proxy requests of its process).

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startTlsPipeline, h2Request } = require('../../support/tls-helpers');

test('an HTTP/2 request proxied to an HTTP/1.1 upstream raises no process warning', async (t) => {
  const up = http.createServer((req, res) => {
    res.statusMessage = 'Fine Thanks'; // a reason phrase of its own, as any HTTP/1.1 server may send
    res.end('from upstream');
  });
  await new Promise((resolve) => up.listen(0, '127.0.0.1', resolve));
  const server = await startTlsPipeline({ config: { enableHTTP2: true, proxy: [{ path: '/app/', upstreams: [`http://127.0.0.1:${up.address().port}`] }] } });
  const warnings = [];
  const onWarning = (warning) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on('warning', onWarning);
  t.after(async () => {
    process.off('warning', onWarning);
    await server.stop();
    up.close();
  });
  const answer = await h2Request(server.httpsUrl, '/app/x');
  assert.equal(answer.status, 200);
  assert.equal(answer.text, 'from upstream');
  const second = await h2Request(server.httpsUrl, '/app/y', { method: 'POST', body: 'b' });
  assert.equal(second.status, 200);
  await new Promise((resolve) => setImmediate(resolve)); // a warning is emitted on the next tick
  assert.deepEqual(warnings, []);
});
