'use strict';
// The suite's own helpers, where a mistake would show up as a flaky test elsewhere.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { request } = require('../support/helpers');

// A server that answers the first request of each connection and keeps it open, then closes it
// when a second request comes on it: what a client stalled past the server's keep-alive time
// meets when its next request crosses the server's close.
async function startClosingServer() {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\n\r\nok');
      socket.once('data', () => socket.destroy());
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, connections: () => connections, close: () => server.close() };
}

test('request(): a GET on a kept-alive connection the server has closed is sent once more on a new one; a POST is not', async (t) => {
  const server = await startClosingServer();
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => { agent.destroy(); server.close(); });
  assert.equal((await request(server.url, { agent })).text, 'ok');
  assert.equal((await request(server.url, { agent })).text, 'ok');
  assert.equal(server.connections(), 2, 'the second GET was sent again on a second connection');
  await assert.rejects(request(server.url, { agent, method: 'POST', body: 'x' }), { code: 'ECONNRESET' });
});
