'use strict';
// What a script request carries beyond its own work: the scripting stage listens to no event of
// the response (the script timeout and SVR.JS's counters are told when the response's head is
// written), and SVR.JS's process.reqcounter / err4xxcounter / err5xxcounter still count.
// In-process: the counters are this process's.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { request } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const SCRIPT = String.raw`
if (href === '/listeners') {
  disableEndElseCallbackExecute = true;
  var counts = JSON.stringify({ close: res.listenerCount('close'), finish: res.listenerCount('finish') });
  res.end(counts);
  return;
}
if (href === '/implicit-404') { disableEndElseCallbackExecute = true; res.statusCode = 404; res.end('no'); return; }
if (href === '/error-503') { disableEndElseCallbackExecute = true; callServerError(503); return; }
if (href === '/head-403') { disableEndElseCallbackExecute = true; res.writeHead(403); res.writeHead(403); res.end(); return; }
if (href === '/ok') { disableEndElseCallbackExecute = true; res.end('ok'); return; }
`;

function listenerCounts(res) {
  return { close: res.listenerCount('close'), finish: res.listenerCount('finish') };
}

// What Node itself puts on a response, from a bare server in this process.
async function nodeOwnListeners() {
  const plain = http.createServer((req, res) => res.end(JSON.stringify(listenerCounts(res))));
  await new Promise((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    return JSON.parse((await request(`http://127.0.0.1:${plain.address().port}/`)).text);
  } finally {
    plain.close();
  }
}

test('a script request adds no listener to the response; the counters count each answer once', async () => {
  const node = await nodeOwnListeners();
  const server = await startPipeline({ config: { useWebRootServerSideScript: true }, files: { 'serverSideScript.js': SCRIPT } });
  try {
    const seen = JSON.parse((await request(`${server.url}/listeners`)).text);
    // The harness logs each request from one 'close' listener, as the worker does.
    assert.deepEqual(seen, { close: node.close + 1, finish: node.finish });

    const before = { requests: process.reqcounter, e4: process.err4xxcounter, e5: process.err5xxcounter };
    assert.equal((await request(`${server.url}/implicit-404`)).status, 404); // head written by end()
    assert.equal((await request(`${server.url}/error-503`)).status, 503); // the error page
    assert.equal((await request(`${server.url}/head-403`)).status, 403); // a second writeHead is ignored
    assert.equal((await request(`${server.url}/ok`)).status, 200);
    assert.equal(process.reqcounter - before.requests, 4);
    assert.equal(process.err4xxcounter - before.e4, 2);
    assert.equal(process.err5xxcounter - before.e5, 1);
  } finally {
    await server.stop();
  }
});
