'use strict';
// sendTimeout on HTTP/2 (net/http2-send-timeout.js). A client that advertised a flow-control
// window of 0 and never sent WINDOW_UPDATE held every stream it opened, and with it a file
// descriptor, a compression slot and buffers, for ever: 10 such connections took a worker from 22
// to 1,312 descriptors. Now a stream whose waiting output has not moved for sendTimeout is reset
// (RST_STREAM CANCEL) and gives all of it back, and a connection whose client reads nothing at all
// is reset; a stream with nothing waiting (an event stream between two events) is left alone, and
// a large write to a client that reads slowly is not cut while it moves.
// In-process (startTlsPipeline), so the worker's descriptors are this process's.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http2 = require('node:http2');
const path = require('node:path');
const tls = require('node:tls');
const { once } = require('node:events');
const { waitUntil } = require('../support/helpers');
const { startTlsPipeline } = require('../support/tls-helpers');
const { frame } = require('../support/h2-frame');

const SEND_TIMEOUT_MS = 400;
const HELD_STREAMS = 20; // more than compressionMaxStreams (16): every compression slot taken
const TEXT = Buffer.from(crypto.randomBytes(1024 * 1024).toString('hex')); // 2 MiB, compressible by half: streamed, compressed as it goes

// An event stream that sends its first event at once and its second when /fire is asked for
// (customvar1 persists across the requests of a worker); /huge answers 1 MiB in one write.
const SCRIPT = String.raw`
if (href === '/events') {
  disableEndElseCallbackExecute = true;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.write('data: first\n\n');
  customvar1 = res;
  return;
}
if (href === '/fire') {
  customvar1.end('data: second\n\n');
  res.end('fired');
  return;
}
if (href === '/huge') {
  res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
  const body = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < body.length; i++) body[i] = i % 251;
  res.end(body);
  return;
}
`;

function fdCount() {
  return fs.readdirSync('/proc/self/fd').length;
}

// Descriptors of this process open on `file`.
function openOn(file) {
  let count = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) count++;
    } catch {} // closed meanwhile
  }
  return count;
}

// Resolves with `promise`, or rejects after ms with what was awaited.
function within(promise, ms, what) {
  let timer;
  const late = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function connect(site, settings) {
  const session = http2.connect(site.httpsUrl, { rejectUnauthorized: false, settings });
  session.on('error', () => {});
  return session;
}

// GET path on session; resolves with the stream once its head came, with its request time.
async function started(session, path, headers = {}) {
  const stream = session.request({ ':path': path, ...headers });
  stream.on('error', () => {});
  stream.askedAt = Date.now();
  const [head] = await once(stream, 'response');
  stream.head = head;
  return stream;
}

function text(stream) {
  return new Promise((resolve, reject) => {
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => { body += chunk; });
    stream.on('end', () => resolve(body));
    stream.on('error', reject);
  });
}

test('HTTP/2 streams with a window of 0 are reset after sendTimeout and give back their files and compression slots; a quiet event stream is not cut', async (t) => {
  const site = await startTlsPipeline({
    config: { enableHTTP2: true, sendTimeout: SEND_TIMEOUT_MS, keepAliveTimeout: 60000 },
    files: { 'big.txt': TEXT, 'serverSideScript.js': SCRIPT },
  });
  t.after(() => site.stop());
  const reader = connect(site);
  t.after(() => reader.destroy());

  const events = await started(reader, '/events');
  const eventText = text(events);
  await once(events, 'data'); // the first event is out: from here the stream has nothing waiting
  const firstEventAt = Date.now();

  const big = path.join(site.root, 'big.txt');
  const fdsBefore = fdCount();
  const stalled = connect(site, { initialWindowSize: 0 });
  t.after(() => stalled.destroy());
  const held = await Promise.all(Array.from({ length: HELD_STREAMS }, () => started(stalled, '/big.txt', { 'accept-encoding': 'br' })));
  const fdsHeld = fdCount();
  assert.equal(openOn(big), HELD_STREAMS, 'each held stream has the file open');
  assert.ok(fdsHeld >= fdsBefore + HELD_STREAMS, `descriptors ${fdsBefore} -> ${fdsHeld}`);
  assert.ok(held.some((s) => s.head['content-encoding'] === 'br'), 'held streams are compressed as they go');
  const meanwhile = await started(reader, '/big.txt', { 'accept-encoding': 'br' });
  meanwhile.resume();
  assert.equal(meanwhile.head['content-encoding'], undefined, 'while they are held, every compression slot is taken');

  const resets = await within(Promise.all(held.map(async (stream) => {
    await once(stream, 'close');
    return { code: stream.rstCode, after: Date.now() - stream.askedAt };
  })), 10000, 'the reset of the streams held at window 0');
  for (const reset of resets) {
    assert.equal(reset.code, http2.constants.NGHTTP2_CANCEL, 'reset with CANCEL');
    assert.ok(reset.after >= SEND_TIMEOUT_MS, `not before sendTimeout: reset ${reset.after} ms after the request`);
  }
  // The stalled connection stays (its sockets: the client's and the server's): only the files go.
  const released = await waitUntil(() => openOn(big) === 0 && fdCount() <= fdsBefore + 2, 5000);
  assert.ok(released, `the held files are closed: ${openOn(big)} open; descriptors ${fdsBefore} -> ${fdsHeld} -> ${fdCount()}`);

  const fresh = await started(reader, '/big.txt', { 'accept-encoding': 'br' });
  fresh.resume();
  assert.equal(fresh.head['content-encoding'], 'br', 'the compression slots are free again');

  assert.ok(Date.now() - firstEventAt > SEND_TIMEOUT_MS, 'the event stream has been quiet for longer than sendTimeout');
  const fire = await started(reader, '/fire');
  assert.equal(await text(fire), 'fired');
  assert.equal(await eventText, 'data: first\n\ndata: second\n\n', 'the quiet event stream got its second event and ended');
  assert.equal(events.rstCode, http2.constants.NGHTTP2_NO_ERROR);
});

// A TLS client that speaks HTTP/2, opens every window (so nothing waits on flow control), asks for
// `streams` large files, then never reads from its socket again.
function nonReadingClient(port, path, streams) {
  const literal = (index, value) => Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);
  return new Promise((resolve) => {
    const socket = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
      const window = Buffer.alloc(6);
      window.writeUInt16BE(0x4, 0); // SETTINGS_INITIAL_WINDOW_SIZE: the largest
      window.writeUInt32BE(0x7fffffff, 2);
      const increment = Buffer.alloc(4);
      increment.writeUInt32BE(0x7fffffff - 65535); // the connection's window too
      const block = Buffer.concat([Buffer.from([0x82, 0x87]), literal(0x04, path), literal(0x01, 'localhost')]);
      const frames = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, window), frame(0x4, 0x1, 0, Buffer.alloc(0)), frame(0x8, 0, 0, increment)];
      for (let i = 0; i < streams; i++) frames.push(frame(0x1, 0x5, 2 * i + 1, block)); // END_STREAM | END_HEADERS
      socket.write(Buffer.concat(frames));
      socket.pause();
      resolve(socket);
    });
    socket.on('error', () => {});
  });
}

test('HTTP/2: a connection whose client reads nothing at all is reset after sendTimeout, its files closed', async (t) => {
  const site = await startTlsPipeline({
    config: { enableHTTP2: true, sendTimeout: SEND_TIMEOUT_MS, keepAliveTimeout: 60000, enableCompression: false },
    files: { 'big.txt': TEXT },
  });
  t.after(() => site.stop());
  const big = path.join(site.root, 'big.txt');
  const client = await nonReadingClient(site.sport, '/big.txt', 8); // 16 MiB: more than the sockets' buffers take
  t.after(() => client.destroy());
  const heldOpen = await waitUntil(() => openOn(big) === 8, 5000);
  assert.ok(heldOpen, `the 8 files are open (${openOn(big)})`);
  const released = await waitUntil(() => openOn(big) === 0, 10000);
  assert.ok(released, `the files are closed (${openOn(big)} open)`);
  // The connection was reset: reading again, the client meets the end of it (ECONNRESET, or the end
  // of what was buffered), not 16 MiB of body and then a connection kept open.
  const closed = new Promise((resolve) => client.on('close', resolve));
  client.resume();
  await within(closed, 5000, 'the end of the connection');
});

test('HTTP/2: a 1 MiB write to a client that reads it slowly is not cut while it moves', async (t) => {
  const timeoutMs = 1000;
  const site = await startTlsPipeline({
    config: { enableHTTP2: true, sendTimeout: timeoutMs },
    files: { 'serverSideScript.js': SCRIPT },
  });
  t.after(() => site.stop());
  const session = connect(site);
  t.after(() => session.destroy());
  const stream = await started(session, '/huge');
  // One DATA frame (16 KiB at most) every 25 ms: 1 MiB takes more than 1.6 s, longer than
  // sendTimeout, while a 64 KiB piece goes out within a tenth of it.
  const chunks = [];
  stream.on('data', (chunk) => {
    chunks.push(chunk);
    stream.pause();
    setTimeout(() => stream.resume(), 25);
  });
  await within(once(stream, 'close'), 30000, 'the slow download');
  assert.equal(stream.rstCode, http2.constants.NGHTTP2_NO_ERROR, 'ended, not reset');
  const body = Buffer.concat(chunks);
  assert.equal(body.length, 1024 * 1024);
  assert.ok(body.every((byte, i) => byte === i % 251), 'every byte, in order');
  assert.ok(Date.now() - stream.askedAt > timeoutMs, 'it took longer than sendTimeout');
});
