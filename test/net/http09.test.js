'use strict';
// An HTTP/0.9 request ("GET /" and a line end, no version) is answered 400 at once and the
// connection closed; Node's parser alone waits for a version that never comes, until the
// silent-connection reset. Requests with a version are untouched, however their first line arrives.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startPipeline } = require('../support/pipeline');

// Writes the pieces (a pause between them), resolves with { answer, ms } when the server closes.
function exchange(port, pieces) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    const started = Date.now();
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no close after 5 s; got: ${JSON.stringify(answer)}`)); }, 5000);
    socket.on('data', (chunk) => { answer += chunk; });
    socket.on('close', () => { clearTimeout(timer); resolve({ answer, ms: Date.now() - started }); });
    socket.on('error', () => {});
    socket.on('connect', async () => {
      for (const piece of pieces) {
        socket.write(piece);
        await new Promise((r) => setTimeout(r, 30));
      }
    });
  });
}

test('HTTP/0.9: 400 at once and closed; HTTP/1.x however it is split still served', async (t) => {
  const site = await startPipeline({ config: { headersTimeout: 20000 }, files: { 'index.html': 'home' }, asWorker: true });
  t.after(() => site.stop());
  for (const line of ['GET /\r\n', 'GET /\n', 'GET /index.html\r\n']) {
    const { answer, ms } = await exchange(site.port, [line]);
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/, JSON.stringify(line));
    assert.ok(ms < 3000, `${JSON.stringify(line)}: answered after ${ms} ms`);
  }
  const split = await exchange(site.port, ['GE', 'T / HT', 'TP/1.1\r\nHost: x\r\n', 'Connection: close\r\n\r\n']);
  assert.match(split.answer, /^HTTP\/1\.1 200 /);
  assert.match(split.answer, /home$/);
  const pipelined = await exchange(site.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
  assert.equal(pipelined.answer.match(/HTTP\/1\.1 200 /g).length, 2);
  const ten = await exchange(site.port, ['GET / HTTP/1.0\r\n\r\n']);
  assert.match(ten.answer, /^HTTP\/1\.1 200 /);
});
