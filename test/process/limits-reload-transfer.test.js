'use strict';
// A reload cut any response longer than shutdownTimeout (a 50 MB
// download at 2 MB/s was cut at 34 MB). A draining worker now keeps a response that is still
// moving up to reloadTransferTimeout; a transfer that does not move is cut at shutdownTimeout.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startServer } = require('../support/helpers');

const SIZE = 12 * 1024 * 1024;
const BIG = Buffer.alloc(SIZE, 'z');

// Downloads url reading about `bytesPerSecond`; onStarted() once the headers are in.
function slowDownload(url, bytesPerSecond, onStarted) {
  return new Promise((resolve) => {
    http.get(url, (res) => {
      let received = 0;
      const startedAt = Date.now();
      res.on('data', (chunk) => {
        received += chunk.length;
        const due = (received / bytesPerSecond) * 1000 - (Date.now() - startedAt);
        if (due > 0) { res.pause(); setTimeout(() => res.resume(), due); }
      });
      res.on('end', () => resolve({ status: res.statusCode, received, complete: res.complete }));
      res.on('error', () => resolve({ status: res.statusCode, received, complete: false }));
      res.on('aborted', () => resolve({ status: res.statusCode, received, complete: false }));
      onStarted();
    }).on('error', (error) => resolve({ error: error.message, received: 0 }));
  });
}

test('a reload does not cut a download that is still moving after shutdownTimeout', async () => {
  const server = await startServer({ config: { shutdownTimeout: 1000 }, files: { 'big.bin': BIG, 'a.txt': 'a' } });
  try {
    let since;
    const download = slowDownload(`${server.url}/big.bin`, 3 * 1024 * 1024, () => {
      since = server.stderr().length;
      server.signal('SIGHUP');
    });
    const result = await download; // ~4 s at 3 MiB/s: four times shutdownTimeout
    assert.equal(result.received, SIZE, `received ${result.received} of ${SIZE}`);
    assert.equal(result.complete, true);
    await server.waitForLog(/reload complete/, 'stderr', since);
    assert.ok(!server.stderr().slice(since).some((l) => /drain forced/.test(l)), server.stderr().slice(since).join('\n'));
  } finally {
    await server.stop();
  }
});

test('a reload cuts a download that does not move, after shutdownTimeout', async () => {
  const server = await startServer({ config: { shutdownTimeout: 1000 }, files: { 'big.bin': BIG } });
  try {
    const req = http.get(`${server.url}/big.bin`);
    const res = await new Promise((resolve) => req.once('response', resolve));
    res.pause(); // never read: the transfer stops once the socket buffers are full
    req.on('error', () => {});
    res.on('error', () => {});
    const since = server.stderr().length;
    server.signal('SIGHUP');
    const line = await server.waitForLog(/drain forced/, 'stderr', since, 20000);
    assert.match(line, /1 connection/);
    req.destroy();
  } finally {
    await server.stop();
  }
});
