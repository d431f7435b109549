'use strict';
// svr advertised no SETTINGS_MAX_CONCURRENT_STREAMS, so one HTTP/2
// connection with 5,000 streams on a large file took a worker from 22 to 5,023 descriptors and
// +717 MiB. Now http2Settings.maxConcurrentStreams (default 128, as nginx) bounds it: streams
// beyond it are refused, and the worker stays within its baseline + 128 descriptors.
// The SETTINGS advertised are checked in-process (the HTTP/2 server lib/net builds, behind the
// pipeline: support/pipeline.js); descriptors and memory on a real worker process.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const tls = require('node:tls');
const { readyWorkerPids } = require('../support/helpers');
const { startTlsServer, startTlsPipeline, h2Connect, h2Request } = require('../support/tls-helpers');
const { frame, readFrames } = require('../support/h2-frame');

const BIG = Buffer.alloc(2 * 1024 * 1024, 'x'); // above fileCacheMaxFileSize: streamed from disk

function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

function rssMiB(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match[1]) / 1024;
}

function remoteSettings(origin) {
  const session = h2Connect(origin);
  return new Promise((resolve, reject) => {
    session.once('remoteSettings', (settings) => { session.close(); resolve(settings); });
    session.once('error', reject);
  });
}

// --- a minimal raw HTTP/2 client: what an attacker writes, not what a browser would ---

function literal(index, value) { // literal header field without indexing, indexed name
  return Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);
}

// GET urlPath on `streams` streams at once, with a flow-control window of 0 (the client reads
// nothing). Resolves with { headers, refused, goaway } once every stream got an answer or a
// reset, or the server sent GOAWAY or closed (Node ends a session that keeps opening refused
// streams: it did so after ~380 refusals here).
function openStreams(port, urlPath, streams, timeoutMs) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
      const settings = Buffer.alloc(6);
      settings.writeUInt16BE(0x4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
      settings.writeUInt32BE(0, 2);
      const block = Buffer.concat([Buffer.from([0x82, 0x87]), literal(0x04, urlPath), literal(0x01, 'localhost')]);
      const frames = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, settings)];
      for (let i = 0; i < streams; i++) frames.push(frame(0x1, 0x5, 2 * i + 1, block)); // END_STREAM | END_HEADERS
      socket.write(Buffer.concat(frames));
    });
    const result = { headers: 0, refused: 0, socket };
    const timer = setTimeout(() => { resolve({ ...result, timedOut: true }); }, timeoutMs);
    readFrames(socket, ({ type, payload }) => {
      if (type === 0x1) result.headers++;
      if (type === 0x3 && payload.readUInt32BE(0) === 0x7) result.refused++; // REFUSED_STREAM
      if (type === 0x7) result.goaway = true;
      if (result.headers + result.refused >= streams || result.goaway) {
        clearTimeout(timer);
        resolve(result);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => { clearTimeout(timer); resolve({ ...result, closed: true }); });
  });
}

test('HTTP/2 advertises maxConcurrentStreams 128 by default, and http2Settings changes it', async () => {
  const server = await startTlsPipeline({ config: { enableHTTP2: true }, files: { 'a.txt': 'a' } });
  try {
    const settings = await remoteSettings(server.httpsUrl);
    assert.equal(settings.maxConcurrentStreams, 128);
  } finally {
    await server.stop();
  }
  const tuned = await startTlsPipeline({ config: { enableHTTP2: true, http2Settings: { maxConcurrentStreams: 20, initialWindowSize: 1048576 } }, files: { 'a.txt': 'a' } });
  try {
    const settings = await remoteSettings(tuned.httpsUrl);
    assert.equal(settings.maxConcurrentStreams, 20);
    assert.equal(settings.initialWindowSize, 1048576);
    assert.equal((await h2Request(tuned.httpsUrl, '/a.txt')).text, 'a');
  } finally {
    await tuned.stop();
  }
});

test('200 streams on one connection: 128 answered, the rest refused, descriptors bounded', async (t) => {
  const server = await startTlsServer({ config: { enableHTTP2: true, workers: 1 }, files: { 'big.bin': BIG } });
  try {
    const [pid] = readyWorkerPids(server);
    assert.equal((await h2Request(server.httpsUrl, '/big.bin')).body.length, BIG.length); // warm
    const fdsBefore = fdCount(pid);
    const rssBefore = rssMiB(pid);
    const result = await openStreams(server.sport, '/big.bin', 200, 20000);
    const fdsDuring = fdCount(pid); // the 128 answered streams are held open: the client reads nothing
    const rssDuring = rssMiB(pid);
    result.socket.destroy();
    assert.equal(result.headers, 128);
    assert.equal(result.refused, 72);
    assert.ok(fdsDuring <= fdsBefore + 128 + 8, `descriptors ${fdsBefore} -> ${fdsDuring}`);
    assert.ok(rssDuring - rssBefore < 64, `RSS ${rssBefore.toFixed(0)} -> ${rssDuring.toFixed(0)} MiB`);
    t.diagnostic(`200 streams held: fds ${fdsBefore} -> ${fdsDuring}; RSS ${rssBefore.toFixed(0)} -> ${rssDuring.toFixed(0)} MiB`);
  } finally {
    await server.stop();
  }
});

test('5,000 streams on one connection: at most 128 answered, the session ends, the worker serves on', async (t) => {
  const server = await startTlsServer({ config: { enableHTTP2: true, workers: 1 }, files: { 'big.bin': BIG, 'a.txt': 'a' } });
  try {
    const [pid] = readyWorkerPids(server);
    assert.equal((await h2Request(server.httpsUrl, '/a.txt')).text, 'a');
    const fdsBefore = fdCount(pid);
    const result = await openStreams(server.sport, '/big.bin', 5000, 20000);
    result.socket.destroy();
    assert.ok(!result.timedOut, `no end after 20 s: answered ${result.headers}, refused ${result.refused}`);
    assert.ok(result.headers <= 128, `${result.headers} streams answered`);
    assert.equal((await h2Request(server.httpsUrl, '/a.txt')).text, 'a');
    const fdsAfter = fdCount(pid);
    assert.ok(fdsAfter <= fdsBefore + 8, `descriptors ${fdsBefore} -> ${fdsAfter}`);
    t.diagnostic(`5,000 streams: ${result.headers} answered, ${result.refused} refused, closed ${Boolean(result.closed)}; fds ${fdsBefore} -> ${fdsAfter}`);
  } finally {
    await server.stop();
  }
});
