'use strict';
// Files too large to cache were compressed on every request, each
// brotli stream holding ~12 MiB (150 held streams: +1.8 GiB), gzip of an 11 MB file costing
// 0.45 s of CPU. Now: at most compressionMaxStreams compressions on the fly per worker (more
// get identity), none for files above compressionMaxFileSize, and a bounded brotli window.
// What a request gets back runs in-process (support/pipeline.js); the memory bound on a real worker.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const { startServer, request, readyWorkerPids } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

function text(size) {
  const words = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ';
  let out = '';
  let i = 0;
  while (out.length < size) out += `${i++} ${words}\n`;
  return out.slice(0, size);
}

const STREAMED = text(3 * 1024 * 1024); // above fileCacheMaxFileSize (1 MiB): compressed as it streams
// Text that compresses little: a held response cannot fit whole in the loopback socket buffers
// (several MiB), so its compressor stays busy while the client does not read.
const HELD = require('node:crypto').randomBytes(18 * 1024 * 1024).toString('base64');

// Opens a request that never reads its body; resolves with the response headers.
function held(url, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.pause();
      resolve({ req, res, coding: res.headers['content-encoding'] || 'identity', vary: res.headers.vary });
    });
    req.on('error', reject);
  });
}

function rssMiB(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}

test('on-the-fly compressions per worker are capped: beyond compressionMaxStreams, identity', async () => {
  const server = await startPipeline({ config: { compressionMaxStreams: 2, compressionMaxFileSize: 64 * 1024 * 1024 }, files: { 'big.txt': HELD } });
  const open = [];
  try {
    for (let i = 0; i < 4; i++) open.push(await held(`${server.url}/big.txt`, { 'accept-encoding': 'br' }));
    assert.deepEqual(open.map((o) => o.coding), ['br', 'br', 'identity', 'identity']);
    assert.ok(open.every((o) => /accept-encoding/i.test(o.vary)));
    for (const o of open) o.req.destroy();
    // once they are gone, compression is available again
    const again = await request(`${server.url}/big.txt`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(again.headers['content-encoding'], 'gzip');
  } finally {
    for (const o of open) o.req.destroy();
    await server.stop();
  }
});

test('files above compressionMaxFileSize are sent uncompressed; smaller streamed ones are compressed', async () => {
  const server = await startPipeline({
    config: { compressionMaxFileSize: 2 * 1024 * 1024 },
    files: { 'big.txt': STREAMED, 'medium.txt': text(1536 * 1024) },
  });
  try {
    const big = await request(`${server.url}/big.txt`, { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(big.headers['content-encoding'], undefined);
    assert.equal(big.body.length, STREAMED.length);
    assert.match(big.headers.vary, /accept-encoding/i);
    const medium = await request(`${server.url}/medium.txt`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(medium.headers['content-encoding'], 'br');
  } finally {
    await server.stop();
  }
});

test('40 held brotli streams cost a bounded amount of memory', async (t) => {
  const server = await startServer({ config: { compressionMaxStreams: 64 }, files: { 'big.txt': STREAMED } });
  const open = [];
  try {
    const [pid] = readyWorkerPids(server);
    const before = rssMiB(pid);
    for (let i = 0; i < 40; i++) open.push(await held(`${server.url}/big.txt`, { 'accept-encoding': 'br' }));
    assert.ok(open.every((o) => o.coding === 'br'));
    const during = rssMiB(pid);
    t.diagnostic(`40 held brotli streams: worker RSS ${before.toFixed(0)} -> ${during.toFixed(0)} MiB`);
    assert.ok(during - before < 40 * 4, `RSS ${before.toFixed(0)} -> ${during.toFixed(0)} MiB`);
  } finally {
    for (const o of open) o.req.destroy();
    await server.stop();
  }
});
